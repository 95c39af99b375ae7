/** Polling for the tests: wait until a condition holds, bounded, failing with what was awaited. */

/** What `until` polls: a value, or a promise of one; falsy means not yet. */
export type Poll<T> = () => Promise<T | undefined | false> | T | undefined | false;

/** Polls `fn` every `every` ms until it gives a truthy value, which it returns; throws "timed out waiting for <what>" after `ms`. */
export async function until<T>(what: string, fn: Poll<T>, ms: number, every: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}
