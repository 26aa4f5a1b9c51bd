/**
 * A small Result union for *expected* outcomes ("the lease is held by someone else").
 * Broken invariants and infrastructure failures are exceptions (see errors.ts).
 */
export type Ok<T> = { readonly ok: true; readonly value: T };
export type Err<E> = { readonly ok: false; readonly error: E };
export type Result<T, E> = Ok<T> | Err<E>;

export const ok = <T>(value: T): Ok<T> => ({ ok: true, value });
export const err = <E>(error: E): Err<E> => ({ ok: false, error });
