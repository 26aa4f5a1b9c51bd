/**
 * Tokens of DynamoDB's expression languages (condition, filter, key condition, update,
 * projection): one lexer for all, keywords case-insensitive as DynamoDB reads them.
 */
import { validation } from './errors.js';

export type TokenKind = 'name' | 'placeholder' | 'value' | 'index' | 'punct' | 'end';
export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly at: number;
}

const PUNCT = ['<=', '>=', '<>', '=', '<', '>', '(', ')', ',', '.', '[', ']', '+', '-'];

/** `what` names the expression in messages: "Invalid ConditionExpression: Syntax error; ...". */
export function lex(source: string, what: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const word = /^[#:]?[A-Za-z0-9_]+/.exec(source.slice(i));
    if (word !== null && (c === '#' || c === ':' || /[A-Za-z_]/.test(c))) {
      const kind: TokenKind = c === '#' ? 'placeholder' : c === ':' ? 'value' : 'name';
      out.push({ kind, text: word[0], at: i });
      i += word[0].length;
      continue;
    }
    if (/[0-9]/.test(c)) {
      const digits = /^[0-9]+/.exec(source.slice(i))![0];
      out.push({ kind: 'index', text: digits, at: i });
      i += digits.length;
      continue;
    }
    const p = PUNCT.find((x) => source.startsWith(x, i));
    if (p === undefined) throw validation(`Invalid ${what}: Invalid token: "${c}", near: "${source.slice(Math.max(0, i - 1), i + 2)}"`);
    out.push({ kind: 'punct', text: p, at: i });
    i += p.length;
  }
  out.push({ kind: 'end', text: '<EOF>', at: source.length });
  return out;
}

/** A cursor over tokens with the helpers every grammar here needs. */
export class Tokens {
  private i = 0;
  constructor(
    readonly list: readonly Token[],
    readonly source: string,
    readonly what: string,
  ) {}
  peek(ahead = 0): Token {
    return this.list[Math.min(this.i + ahead, this.list.length - 1)]!;
  }
  next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.i++;
    return t;
  }
  /** Is the next token this keyword (case-insensitive) or punctuation? */
  is(text: string, ahead = 0): boolean {
    const t = this.peek(ahead);
    return (t.kind === 'name' || t.kind === 'punct') && t.text.toUpperCase() === text;
  }
  accept(text: string): boolean {
    if (!this.is(text)) return false;
    this.i++;
    return true;
  }
  expect(text: string): void {
    if (!this.accept(text)) this.fail();
  }
  /** DynamoDB's "near": the token before, the offending one and the one after. */
  fail(): never {
    const t = this.peek();
    const before = this.list[Math.max(0, this.i - 1)]!;
    const after = this.peek(1);
    const end = t.kind === 'end' ? this.source.length : after.kind === 'end' ? t.at + t.text.length : after.at + after.text.length;
    throw validation(`Invalid ${this.what}: Syntax error; token: "${t.text}", near: "${this.source.slice(Math.min(before.at, t.at), end).trim()}"`);
  }
}
