// Runs operations on the same key one after another (in this process), others in parallel:
// a sandbox's runtime operations (a resume racing a delete must not bring a process back), and
// writes to one stored document (the embedded FerretDB applies an update by reading the
// document and writing it back whole, so two at once can lose one, and neither a conditional
// update nor $inc is atomic there; MongoDB needs none of this for documents).
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
