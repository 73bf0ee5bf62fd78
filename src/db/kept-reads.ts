// Values read from the database kept by key for a short time, for checks made on every call (the
// LLM gateway's): forget() ends them at once on this replica (a change made here), and a read
// under way across it is not kept; other replicas see a change within `ms`.
export class KeptReads<T> {
  private readonly kept = new Map<string, { value: T; at: number }>();
  private generation = 0;

  constructor(
    private readonly ms: number,
    private readonly now: () => number,
    private readonly max = 10_000,
  ) {}

  async get(key: string, read: () => Promise<T>): Promise<T> {
    const [hit, at, generation] = [this.kept.get(key), this.now(), this.generation];
    if (hit && at - hit.at < this.ms) return hit.value;
    const value = await read();
    if (this.kept.size >= this.max) this.kept.clear();
    if (generation === this.generation) this.kept.set(key, { value, at });
    return value;
  }

  forget(): void {
    this.generation++;
    this.kept.clear();
  }
}
