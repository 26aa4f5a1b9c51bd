/**
 * The real S3Client against the S3 stand-in's core (cli/local/s3-core.ts) in memory: an SDK
 * HttpHandler that hands each request to the same code the node:http endpoint does, and answers as
 * that endpoint would. A lost answer (dropResponses) is applied and then fails as a cut connection
 * does (SimNetworkError ECONNRESET: the SDK's retry reads it as transient, like the real reset).
 */
import { S3Client } from '@aws-sdk/client-s3';
import type { HttpHandlerOptions, HttpRequest } from '@smithy/types';
import type { S3Core } from '../../../cli/local/s3-core.js';
import { SimNetworkError, type Unanswered } from './errors.js';
import type { ShortCutOptions } from '../short-cut.js';
import { installProviderShortCut } from './short-cut.js';
import { lowerHeaders, noConfig, pathAndQuery, requestBytes, sdkResponse, throwIfAborted, type SimHttpHandler } from './smithy.js';

export const SIM_S3_HOST = 's3.sim';
export const SIM_S3_URL = `http://${SIM_S3_HOST}`;

export function simS3Handler(core: S3Core, unanswered: Unanswered): SimHttpHandler {
  return {
    ...noConfig,
    async handle(request: HttpRequest, options?: HttpHandlerOptions) {
      throwIfAborted(options);
      const what = `${request.method} ${request.hostname}${request.path}`;
      if (request.hostname !== SIM_S3_HOST) return unanswered.refuse('s3', what, `only ${SIM_S3_HOST} is served (path-style)`);
      const body = await requestBytes(request, 's3', unanswered);
      // No await from here to the answer: the core's check and write are one step.
      const answer = core.handle({ method: request.method, url: pathAndQuery(request), headers: lowerHeaders(request), body });
      if (answer.lost) throw new SimNetworkError('ECONNRESET', 's3', what);
      return sdkResponse(request.method, answer.status, answer.headers, answer.body);
    },
  };
}

/**
 * An S3Client on the in-memory handler, configured as the local one (lib's s3Client: path-style,
 * only the checksums the adapter sends and compares), with dummy static credentials and ONE
 * attempt by default: the SDK's retry sleeps a jittered delay, which a simulator should not have
 * happen behind its back (pass maxAttempts to play the SDK's resend after a lost answer). Its
 * sends go the short-cut (test/sim/effects/short-cut.ts; its bucket path-style after the
 * endpoint) unless `shortCut` is 'sdk'.
 */
export function simS3Client(handler: SimHttpHandler, opts: { maxAttempts?: number; shortCut?: 'sdk' | ShortCutOptions } = {}): S3Client {
  const client = new S3Client({
    endpoint: SIM_S3_URL,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDSIMULATOR', secretAccessKey: 'simulator' },
    maxAttempts: opts.maxAttempts ?? 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: handler,
  });
  if (opts.shortCut !== 'sdk') installProviderShortCut(client as never, (input) => `${SIM_S3_URL}/${encodeURIComponent(String(input.Bucket))}`, opts.shortCut);
  return client;
}
