/**
 * A 2xx answer spoiled on the way, written over node:http (the stand-ins' `cut2xx`): the
 * provider took the request, and the caller cannot read that it did.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { cutHalf, type CutBody } from './fault-switch.js';

/** Writes `body` cut as `how` says: its first half as the whole answer, or its first half and then a reset connection. */
export function writeCutAnswer(req: IncomingMessage, res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: string, how: CutBody): void {
  const half = cutHalf(body);
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(how === 'truncated' ? half : body)) });
  if (how === 'truncated') return void res.end(half);
  res.write(half, () => req.socket.destroy());
}
