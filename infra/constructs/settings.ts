/**
 * The construct's settings, checked at synth with the code the handlers run at start-up (the
 * environment parsers of lib/workflow/config.ts) plus the rules only the stack knows: the
 * schedule's whole minutes, the unit size a transaction can hold, a staleness threshold above
 * the lease and the skew bound.
 */
import type { Duration } from 'aws-cdk-lib';
import { ConfigError, MAX_TRANSACTION_ACTIONS, MAX_UNIT_EFFECTS } from '../../lib/protocol/index.js';
import { ENV, integer, leaseSettingsFromEnv, maxUnitSize, sweepSettingsFromEnv } from '../../lib/workflow/index.js';
import { MAX_CUSTOMERS } from '../../lib/workloads/invoices.js';

export interface DurationSettings {
  leaseDuration: Duration;
  maxClockSkew: Duration;
  staleAfter: Duration;
  sweepInterval: Duration;
  effectsPerItem: number;
}

export function validateSettings(env: Record<string, string>, d: DurationSettings): void {
  const { leaseDuration: lease, maxClockSkew: skew, staleAfter, sweepInterval, effectsPerItem } = d;
  sweepSettingsFromEnv(env, leaseSettingsFromEnv(env));
  // EventBridge Scheduler's rate() counts whole minutes; CDK would fail later with a bare error.
  if (sweepInterval.toSeconds() % 60 !== 0) throw new ConfigError('sweepInterval', `must be a whole number of minutes, got ${sweepInterval.toSeconds()} s`);
  if (!Number.isSafeInteger(effectsPerItem) || effectsPerItem < 1 || effectsPerItem > MAX_UNIT_EFFECTS) {
    throw new ConfigError('effectsPerItem', `must be an integer in [1, ${MAX_UNIT_EFFECTS}], got ${effectsPerItem}`);
  }
  const cap = maxUnitSize(effectsPerItem);
  const unitSize = Number(env[ENV.unitSize]);
  if (!Number.isSafeInteger(unitSize) || unitSize < 1 || unitSize > cap) {
    throw new ConfigError(
      'unitSize',
      `must be an integer in [1, ${cap}] (${effectsPerItem} effects per item + fence + checkpoint <= ${MAX_TRANSACTION_ACTIONS} transaction actions), got ${env[ENV.unitSize]}`,
    );
  }
  integer(env, ENV.customers, undefined, 0, MAX_CUSTOMERS);
  if (staleAfter.toMilliseconds() <= lease.toMilliseconds() + skew.toMilliseconds()) {
    throw new ConfigError(
      'staleAfter',
      `staleAfter (${staleAfter.toMilliseconds()} ms) must exceed the lease duration plus the clock-skew bound ` +
        `(${lease.toMilliseconds() + skew.toMilliseconds()} ms): the sweeper would requeue jobs whose holder is still live`,
    );
  }
}
