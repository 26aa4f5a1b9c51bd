/**
 * A small Result union for *expected* outcomes ("the lease is held by someone else").
 * Broken invariants and infrastructure failures are exceptions (see errors.ts).
 */
/** The expected outcome that went the caller's way. */
export type Ok<T> = { readonly ok: true; readonly value: T };
/** The expected outcome that did not (a held lease, an existing record): a value, not an exception. */
export type Err<E> = { readonly ok: false; readonly error: E };
/** Either; branch on `ok`. */
export type Result<T, E> = Ok<T> | Err<E>;

/** Wraps a value as Ok. */
export const ok = <T>(value: T): Ok<T> => ({ ok: true, value });
/** Wraps an error value as Err. */
export const err = <E>(error: E): Err<E> => ({ ok: false, error });
