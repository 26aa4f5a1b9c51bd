/** A benchmark whose own setup went wrong (a side that did not run as measured): the run stops, named. */
export class BenchError extends Error {
  override readonly name = 'BenchError';
}
