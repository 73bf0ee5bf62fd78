// Runs operations on the same key one after another (in this process), others in parallel: a
// sandbox's runtime operations (a resume racing a delete must not bring a process back), and a
// conversation's event batches (each claims its numbers with a conditional update; queued, the
// batches of one process do not make each other retry). Single-document database writes need
// none of this: they are atomic on MongoDB and made so on FerretDB by the write gate (src/db/write-gate/write-gate.ts).
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(operation);
    this.tails.set(key, next);
    void next
      .finally(() => {
        if (this.tails.get(key) === next) this.tails.delete(key);
      })
      .catch(() => {});
    return next;
  }
}
