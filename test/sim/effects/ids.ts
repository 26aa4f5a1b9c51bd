/**
 * Ids without randomness: the stand-ins' defaults are randomUUID, which a simulator cannot replay.
 * Each source counts, in UUID shape (the cores strip the dashes and cut prefixes of it, so the
 * count comes first), with a tag of its own so two stand-ins never give the same id.
 */
export function sequentialIds(tag: number): () => string {
  let n = 0;
  const t = tag.toString(16).padStart(12, '0');
  return () => {
    const hex = (++n).toString(16).padStart(12, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4000-8000-${t}`;
  };
}
