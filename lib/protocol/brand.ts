/**
 * Nominal ("branded") types: a raw number or string never passes for a token or a key.
 * Five lines instead of a dependency (see type-fest's `Tagged`). The protocol's own brands live
 * here too, so that errors.ts can name them without importing the modules that throw them.
 */
declare const brand: unique symbol;
/** `T` tagged with the name `B`: assignable to `T`, but a plain `T` is not assignable to it. */
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** A fencing token: `epoch * 2^32 + sequence` (generation.ts). */
export type Generation = Brand<number, 'Generation'>;
/** The key of a lease item (lease.ts). */
export type LeaseKey = Brand<string, 'LeaseKey'>;
/** Who holds a lease: unique per holder and invocation (lease.ts). */
export type OwnerId = Brand<string, 'OwnerId'>;
