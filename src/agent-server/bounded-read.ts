// The one reader of an agent server's answers. A sandbox's agent server is the user's to
// change, and answers read whole without a bound let a 300 MB body take the service's memory
// with it (131 → 1860 MiB at its peak in test/reliability/agent-server-bounds.test.ts). Every body is read up to a bound on its size (a Content-Length past it is
// refused before a byte is read) and within the call's time (the AbortSignal given to fetch
// also ends a body still arriving); past either, the connection is dropped, not drained.
//
// No route streams an agent server's body on to a client: a file is read up to its own bound
// (MAX_FILE_BYTES, the file route's 413), and the trajectory export is built from stored events.

const MiB = 1024 * 1024;

/**
 * The largest JSON answer read from an agent server (the one place to change it). Its largest
 * real answers, a page of 100 events or a repository's skills, are well below.
 */
export const MAX_AGENT_JSON_BYTES = 10 * MiB;
/** The most of an error answer read: only a 300-character summary of it is kept (error-summary.ts). */
export const MAX_AGENT_ERROR_BYTES = 64 * 1024;
/** The most a trajectory read page by page from an agent server holds in all (as the export's bound). */
export const MAX_AGENT_EVENTS_BYTES = 64 * MiB;

/** A bound in words: "10 MB" (MiB, as the rest of the docs count). */
export const inMegabytes = (bytes: number) => `${Math.round((bytes / MiB) * 10) / 10} MB`;

/** A body that did not arrive whole: the call's time ran out, or the connection broke. */
export class BodyNotRead extends Error {
  constructor(
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(timedOut ? 'no whole answer in time' : (cause as Error).message, { cause });
    this.name = 'BodyNotRead';
  }
}

/**
 * An answer's body, or null when it is larger than maxBytes (the rest is never read). Throws
 * BodyNotRead when it does not arrive whole: the call's signal timed out or the connection broke.
 */
export async function readBounded(response: Response, maxBytes: number): Promise<Buffer | null> {
  if (Number(response.headers.get('content-length')) > maxBytes) {
    await discard(response);
    return null;
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks, size);
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        return null;
      }
      chunks.push(value);
    }
  } catch (error) {
    throw new BodyNotRead((error as Error).name === 'TimeoutError', error);
  }
}

/** Drops an answer's body unread (its connection closes instead of draining it). */
export async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}
