// tier: quick
/**
 * DynamoDB Local listens on the loopback interface only: it is an unauthenticated database, and
 * `npm run dynamodb` says 127.0.0.1. Read from the kernel's socket tables (/proc/net/tcp and
 * tcp6), not from what the launcher believes.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDynamoLocal, type DynamoLocal } from '../cli/local/dynamodb-local.js';

/** An address of /proc/net/tcp ("0100007F") or tcp6 (four little-endian 32-bit words), as text. */
export function procAddress(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((w) => (w.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  if (bytes.length === 4) return bytes.join('.');
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (mapped) return `::ffff:${bytes.slice(12).join('.')}`;
  if (bytes.every((b) => b === 0)) return '::';
  return Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':');
}

/** The local addresses of every listening TCP socket on `port` (IPv4 and IPv6). */
export function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // no IPv6 on this kernel
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (local === undefined || state !== '0A') continue; // 0A: LISTEN
      const [addr, portHex] = local.split(':');
      if (parseInt(portHex!, 16) === port) found.push(procAddress(addr!));
    }
  }
  return found;
}

describe('DynamoDB Local bind address', () => {
  let local: DynamoLocal;
  beforeAll(async () => {
    local = await startDynamoLocal({ sharedDb: false });
  }, 60_000);
  afterAll(async () => {
    await local?.stop();
  });

  it('reads the kernel tables right', () => {
    expect(procAddress('0100007F')).toBe('127.0.0.1');
    expect(procAddress('00000000')).toBe('0.0.0.0');
    expect(procAddress('0000000000000000FFFF00000100007F')).toBe('::ffff:127.0.0.1');
    expect(procAddress('00000000000000000000000000000000')).toBe('::');
  });

  it('listens on 127.0.0.1 only, not on every interface', () => {
    const addrs = listeningAddresses(local.port);
    expect(addrs.length, `no listening socket on port ${local.port}`).toBeGreaterThan(0);
    for (const a of addrs) expect(['127.0.0.1', '::ffff:127.0.0.1']).toContain(a);
  });
});
