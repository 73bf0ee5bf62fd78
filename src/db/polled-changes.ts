// A stored thing watched by reading it again (tRPC's watch subscriptions): each read that differs
// from the last one pushed is pushed once; a change made on any replica shows within `everyMs`.
// The first read answering null is the caller's to refuse (`missing`); null later (deleted) ends
// the watch, as does the subscriber going away (`signal`).

export async function* polledChanges<T>(
  read: () => Promise<T | null>,
  options: { everyMs: number; missing: () => Error; signal?: AbortSignal | undefined },
): AsyncGenerator<T> {
  let last: string | null = null;
  for (;;) {
    const value = await read();
    if (value === null) {
      if (last === null) throw options.missing();
      return;
    }
    const text = JSON.stringify(value);
    if (text !== last) {
      last = text;
      yield value;
    }
    if (await abortedWithin(options.everyMs, options.signal)) return;
  }
}

/** Waits `ms`, or less when `signal` aborts; true when it did. */
function abortedWithin(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (aborted: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(aborted);
    };
    const onAbort = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
