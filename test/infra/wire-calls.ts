/**
 * The AWS calls of a bundled function's run, from the HTTP requests its process sent
 * (test/infra/wire-preload.mjs): the same records (cli/local/aws-calls.ts AwsCall) and the same
 * authorizations (cli/local/aws-authorizations.ts) as the local runtime's SDK middleware gives, so
 * test/infra/artifact.test.ts evaluates the bundles' calls against the stack as iam-calls does.
 * No capacity: a request on the wire was sent as the bundle built it.
 */
import { ArnBuilder, dynamodbAuthorizations, s3Authorizations, streamsAuthorizations, type ArnNames } from '../../cli/local/aws-authorizations.js';
import type { AwsCall } from '../../cli/local/aws-calls.js';

export interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A request the converter does not know: better named than silently skipped. */
export class UnknownWireRequestError extends Error {
  override name = 'UnknownWireRequestError';
}

/** S3, path-style (`/<bucket>/<key>?<query>`): the operation from the method and the query. */
function s3Call(fn: string, r: WireRequest, arns: ArnBuilder): AwsCall {
  const url = new URL(r.path, 'http://s3.local');
  const [bucket = '', ...rest] = url.pathname.slice(1).split('/');
  const key = rest.length === 0 ? undefined : decodeURIComponent(rest.join('/'));
  const q = url.searchParams;
  const action =
    q.get('list-type') === '2' ? 'ListObjectsV2'
    : key === undefined ? (r.method === 'HEAD' ? 'HeadBucket' : `${r.method} bucket`)
    : ({ GET: 'GetObject', HEAD: 'HeadObject', PUT: 'PutObject', DELETE: 'DeleteObject' } as Record<string, string>)[r.method] ?? `${r.method} object`;
  const input: Record<string, unknown> = {
    Bucket: bucket,
    ...(key === undefined ? {} : { Key: key }),
    ...(q.get('prefix') === null ? {} : { Prefix: q.get('prefix') }),
    ...(q.get('versionId') === null ? {} : { VersionId: q.get('versionId') }),
    ...(r.headers['if-none-match'] === undefined ? {} : { IfNoneMatch: r.headers['if-none-match'] }),
    ...(r.headers['if-match'] === undefined ? {} : { IfMatch: r.headers['if-match'] }),
  };
  const authorizations = s3Authorizations(action, input, arns, key);
  return { fn, service: 's3', action, authorizations, resources: [...new Set(authorizations.map((a) => a.resource))], bucket, ...(key === undefined ? {} : { key }), input };
}

/** A request signed (SigV4) for Lambda: an http target's call to the sandbox provider's function URL. */
const signedForLambda = (r: WireRequest): boolean => /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/lambda\/aws4_request,/.test(r.headers.authorization ?? '');

/**
 * The AWS calls among `wire`: DynamoDB, Streams and SQS by their X-Amz-Target, SES v2 by its path,
 * S3 by its endpoint (`s3Host`, the `host:port` of the local S3 endpoint), a function URL by its
 * signature's service (`lambda`); anything else (a live provider, unsigned) is no AWS call.
 */
export function callsFromWire(fn: string, wire: readonly WireRequest[], names: ArnNames, s3Host: string): AwsCall[] {
  const arns = new ArnBuilder(names);
  const aws = wire.filter((r) => r.headers['x-amz-target'] !== undefined || r.path.startsWith('/v2/email/') || r.headers.host === s3Host || signedForLambda(r));
  return aws.map((r): AwsCall => {
    if (signedForLambda(r)) {
      const authorizations = arns.functionUrl();
      return { fn, service: 'lambda', action: 'InvokeFunctionUrl', authorizations, resources: [...new Set(authorizations.map((a) => a.resource))], input: {} };
    }
    const target = r.headers['x-amz-target'];
    const input = (r.body ? JSON.parse(r.body) : {}) as Record<string, unknown>;
    if (target?.startsWith('DynamoDB_20120810.')) {
      const action = target.split('.')[1]!;
      const authorizations = dynamodbAuthorizations(action, input, arns);
      return { fn, service: 'dynamodb', action, authorizations, resources: [...new Set(authorizations.map((a) => a.resource))], ...(typeof input.TableName === 'string' ? { table: input.TableName } : {}), input };
    }
    if (target?.startsWith('DynamoDBStreams_20120810.')) {
      const action = target.split('.')[1]!;
      const authorizations = streamsAuthorizations(action, input, arns, typeof input.StreamArn === 'string' ? input.StreamArn : undefined);
      return { fn, service: 'dynamodbstreams', action, authorizations, resources: authorizations.map((a) => a.resource), input };
    }
    if (r.method === 'POST' && r.path.startsWith('/v2/email/outbound-emails')) {
      const resources = arns.sendEmail(String(input.FromEmailAddress));
      return { fn, service: 'sesv2', action: 'SendEmail', authorizations: resources.map((resource) => ({ action: 'ses:SendEmail', resource, context: {} })), resources, input };
    }
    if (target === 'secretsmanager.GetSecretValue') {
      // The function names the secret by the ARN its environment holds: the one the stack granted.
      const resource = String(input.SecretId);
      return { fn, service: 'secretsmanager', action: 'GetSecretValue', authorizations: [{ action: 'secretsmanager:GetSecretValue', resource, context: {} }], resources: [resource], input };
    }
    if (target === 'AmazonSQS.SendMessage') {
      const resource = arns.queue();
      return { fn, service: 'sqs', action: 'SendMessage', authorizations: [{ action: 'sqs:SendMessage', resource, context: {} }], resources: [resource], input };
    }
    if (target !== undefined) throw new UnknownWireRequestError(`${fn}: ${target} (${r.method} ${r.path})`);
    return s3Call(fn, r, arns);
  });
}
