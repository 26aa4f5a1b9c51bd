/**
 * How the in-memory stand-ins fail. A request they cannot answer (another host, an unknown route,
 * a body they cannot read) is a SimUnansweredError, thrown at the caller AND kept in the run's
 * `Unanswered` ledger: the project's email and http adapters turn any thrown error into a verdict
 * ("maybe taken"), so the throw alone would read as a plausible provider answer; the ledger makes
 * `close()` of the simulated effects fail loudly instead.
 */
import { FencedError } from '../../../lib/protocol/index.js';

/** A request none of the in-memory stand-ins answers: a gap in the simulator, never a provider's answer. */
export class SimUnansweredError extends FencedError {
  readonly code = 'SIM_UNANSWERED';
  constructor(
    readonly service: string,
    readonly request: string,
    why: string,
  ) {
    super(`${service}: the in-memory stand-in cannot answer ${request}: ${why}`);
  }
}

/**
 * What a socket's failure is in memory: `code` is Node's network code, the one the SDK's retry
 * strategy and the providers' behaviour model (classifyNoAnswer) read: ECONNRESET for an answer
 * lost after the request was taken (maybe taken), ECONNREFUSED for a provider that took nothing.
 */
export class SimNetworkError extends FencedError {
  constructor(
    readonly code: 'ECONNRESET' | 'ECONNREFUSED',
    readonly service: string,
    readonly request: string,
  ) {
    super(`${service}: ${code === 'ECONNRESET' ? 'the connection was cut before the answer' : 'the connection was refused'} (${request}, in memory)`);
  }
}

/** Every request the stand-ins of one run could not answer, in order. */
export class Unanswered {
  readonly errors: SimUnansweredError[] = [];

  /** Records and throws: the caller sees the failure at once, and the run's close() again. */
  refuse(service: string, request: string, why: string): never {
    const e = new SimUnansweredError(service, request, why);
    this.errors.push(e);
    throw e;
  }

  /** Throws the first request left unanswered, if any. */
  check(): void {
    if (this.errors.length > 0) throw this.errors[0]!;
  }
}
