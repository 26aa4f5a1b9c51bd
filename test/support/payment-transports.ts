/**
 * One payment stand-in and FetchHttpProvider on it, over either transport: the node:http server
 * `npm start` runs, and the simulator's in-memory fetch over the same core. A case written once
 * with these runs on both (test/provider-standins.test.ts, test/sim-effects.test.ts).
 */
import { PaymentsCore, type PaymentsOptions, type PaymentsStandIn } from '../../cli/local/payments-core.js';
import { startPaymentsProvider } from '../../cli/local/payments-provider.js';
import { FetchHttpProvider } from '../../lib/workflow/adapters/index.js';
import { Unanswered } from '../sim/effects/errors.js';
import { simFetch, SIM_PAYMENTS_URL } from '../sim/effects/fetch.js';

export interface PaymentsRig {
  readonly payments: PaymentsStandIn;
  http(path?: string): FetchHttpProvider;
  close(): Promise<void>;
}

export const PAYMENT_TRANSPORTS: readonly [string, (opts?: PaymentsOptions) => Promise<PaymentsRig>][] = [
  [
    'the node:http provider',
    async (opts) => {
      const p = await startPaymentsProvider(opts);
      return { payments: p, http: (path = '/charges') => new FetchHttpProvider(`${p.url}${path}`, 3_000), close: () => p.close() };
    },
  ],
  [
    'the in-memory fetch',
    async (opts) => {
      const p = new PaymentsCore(opts);
      const fetchFn = simFetch(p, new Unanswered());
      return { payments: p, http: (path = '/charges') => new FetchHttpProvider(`${SIM_PAYMENTS_URL}${path}`, 3_000, {}, fetchFn), close: async () => undefined };
    },
  ],
];
