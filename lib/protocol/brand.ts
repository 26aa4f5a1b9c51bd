/**
 * Nominal ("branded") types: a raw number or string never passes for a token or a key.
 * Five lines instead of a dependency (see type-fest's `Tagged`).
 */
declare const brand: unique symbol;
export type Brand<T, B extends string> = T & { readonly [brand]: B };
