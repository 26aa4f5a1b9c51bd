// Loaded with --import into a bundled function's process (test/infra/lambda-run.ts): every HTTP
// request its SDK clients send (node:http) and every fetch (an http target's provider), as one
// JSON line in $TEST_WIRE. The bundle carries its own SDK,
// out of reach of a middleware; Node's http module is the one thing it shares with the test, so the
// IAM evaluation of the bundled runs reads the calls here (test/infra/wire-calls.ts).
import http from 'node:http';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const file = process.env.TEST_WIRE;
const original = http.request;
const KEPT = ['host', 'x-amz-target', 'if-none-match', 'if-match'];
/** Of a signature, only its credential scope (who signed, for which region and service), never the signature itself. */
const scopeOf = (auth) => /^AWS4-HMAC-SHA256 Credential=[^,]+,/.exec(auth)?.[0];

http.request = function request(...args) {
  const req = original.apply(this, args);
  const chunks = [];
  const keep = (chunk) => {
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(Buffer.from(chunk));
  };
  const write = req.write;
  const end = req.end;
  req.write = function (chunk, ...rest) {
    keep(chunk);
    return write.call(this, chunk, ...rest);
  };
  req.end = function (chunk, ...rest) {
    keep(chunk);
    const h = req.getHeaders();
    const headers = Object.fromEntries(KEPT.filter((k) => h[k] !== undefined).map((k) => [k, String(h[k])]));
    // JSON bodies only (DynamoDB, SES v2): an S3 object's body is not the call's shape.
    const json = headers['x-amz-target'] !== undefined || req.path.startsWith('/v2/');
    if (file) appendFileSync(file, JSON.stringify({ method: req.method, path: req.path, headers, ...(json ? { body: Buffer.concat(chunks).toString('utf8') } : {}) }) + '\n');
    return end.call(this, chunk, ...rest);
  };
  return req;
};
// The bundle imports `request` from node:http by name: make its binding see the wrapper.
syncBuiltinESMExports();

// fetch (undici) does not go through node:http: an http target's calls are recorded here.
const originalFetch = globalThis.fetch;
globalThis.fetch = function fetch(input, init) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const h = new Headers(init?.headers);
  const scope = scopeOf(h.get('authorization') ?? '');
  const headers = { host: url.host, ...(scope === undefined ? {} : { authorization: scope }) };
  if (file) appendFileSync(file, JSON.stringify({ method: init?.method ?? 'GET', path: url.pathname + url.search, headers }) + '\n');
  return originalFetch.call(this, input, init);
};
