// Runs operations on the same key one after another (in this process), others in parallel.
// The embedded FerretDB applies an update by reading the document and writing it back whole,
// so two updates of one document at once can lose one of them (and a conditional update or
// $inc is not atomic either); MongoDB needs none of this.
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
