/**
 * The two ways the model refuses a request: as the service would (SimAwsError, answered with
 * DynamoDB's own error body so the SDK raises its typed exception), or because the model does not
 * implement what was asked (SimUnsupportedError: never turned into a plausible answer).
 */
import { FencedError } from '../../../lib/protocol/index.js';

/** A service error, exactly as DynamoDB answers it: `type` is the exception's short name. */
export class SimAwsError extends FencedError {
  readonly code = 'SIM_AWS_ERROR';
  constructor(
    readonly type: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
    readonly status = 400,
  ) {
    super(`${type}: ${message}`);
    this.awsMessage = message;
  }
  /** The message as the service words it (the Error's message carries the type too). */
  readonly awsMessage: string;
}

/** An operation, parameter or expression feature the model does not implement. */
export class SimUnsupportedError extends FencedError {
  readonly code = 'SIM_UNSUPPORTED';
  constructor(readonly what: string) {
    super(`not simulated: ${what}`);
  }
}

export const validation = (message: string): SimAwsError => new SimAwsError('ValidationException', message);
export const notFound = (message = 'Requested resource not found'): SimAwsError => new SimAwsError('ResourceNotFoundException', message);
