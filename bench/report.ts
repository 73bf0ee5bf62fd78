// Collects the bench's rounds and prints them as Markdown: each figure as the median over
// rounds with its spread, and the ratios taken within each round (service ÷ floor and
// service ÷ reference measured seconds apart), then their median and spread.
import type { LoadResult } from './load.js';
import type { Scenario, TargetName } from './scenarios.js';

export interface Sample {
  result: LoadResult;
  /** Cores busy with processes outside the bench during the sample (other users of the machine). */
  otherCores: number;
  /** CPU the load generator (this process) spent per request, in microseconds. */
  generatorUs: number;
  /** CPU the target process and the database spent per request, in microseconds. */
  targetUs: number;
  databaseUs: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const spread = (values: number[], digits: number) =>
  values.length > 1 ? ` (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})` : '';
const fmt = (values: number[], digits: number) => `${median(values).toFixed(digits)}${spread(values, digits)}`;

export class Results {
  /** scenario name → target → one sample per round */
  private readonly samples = new Map<string, Map<TargetName, Sample[]>>();
  private readonly scenarios: Scenario[] = [];
  readonly notes: string[] = [];
  readonly rows: { what: string; value: string }[] = [];

  add(scenario: Scenario, target: TargetName, sample: Sample): void {
    if (!this.samples.has(scenario.name)) {
      this.samples.set(scenario.name, new Map());
      this.scenarios.push(scenario);
    }
    const byTarget = this.samples.get(scenario.name)!;
    byTarget.set(target, [...(byTarget.get(target) ?? []), sample]);
  }

  /** The median p50 (ms) of a scenario's target, if it was measured. */
  medianP50(scenario: string, target: TargetName): number | undefined {
    const samples = this.samples.get(scenario)?.get(target);
    return samples?.length ? median(samples.map((s) => s.result.p50)) : undefined;
  }

  /** One line of progress on stderr, so a long run shows where it is. */
  static progress(scenario: Scenario, target: TargetName, round: number, sample: Sample): void {
    const r = sample.result;
    const bad =
      r.unexpected || r.socketErrors
        ? `  UNEXPECTED ${r.unexpected} (${r.firstUnexpected?.slice(0, 200)}), socket errors ${r.socketErrors}`
        : '';
    process.stderr.write(
      `round ${round} ${scenario.name} [${target}]: ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ` +
        `CPU/req ${sample.targetUs.toFixed(0)} µs + DB ${sample.databaseUs.toFixed(0)} µs, other load ${sample.otherCores.toFixed(2)} cores${bad}\n`,
    );
  }

  markdown(): string {
    const out: string[] = [];
    out.push('| scenario | target | req/s | p50 ms | p99 ms | target CPU µs/req | DB CPU µs/req | other load (cores) | unexpected |');
    out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const scenario of this.scenarios) {
      for (const [target, samples] of this.samples.get(scenario.name)!) {
        const r = samples.map((s) => s.result);
        out.push(
          `| ${scenario.name} | ${target} | ${fmt(
            r.map((x) => x.rps),
            0,
          )} | ${fmt(
            r.map((x) => x.p50),
            1,
          )} | ${fmt(
            r.map((x) => x.p99),
            1,
          )} | ` +
            `${fmt(
              samples.map((s) => s.targetUs),
              0,
            )} | ${fmt(
              samples.map((s) => s.databaseUs),
              0,
            )} | ${fmt(
              samples.map((s) => s.otherCores),
              2,
            )} | ${r.reduce((a, x) => a + x.unexpected + x.socketErrors, 0)} |`,
        );
      }
    }
    out.push('');
    out.push('| scenario | service ÷ floor req/s | service ÷ floor p99 | service ÷ reference req/s |');
    out.push('|---|---:|---:|---:|');
    for (const scenario of this.scenarios.filter((s) => s.ratios)) {
      const byTarget = this.samples.get(scenario.name)!;
      const ratio = (other: TargetName, pick: (r: LoadResult) => number) => {
        const a = byTarget.get('service');
        const b = byTarget.get(other);
        if (!a || !b) return '–';
        const rounds = Math.min(a.length, b.length);
        return fmt(
          Array.from({ length: rounds }, (_, i) => pick(a[i]!.result) / pick(b[i]!.result)),
          2,
        );
      };
      out.push(
        `| ${scenario.name} | ${ratio('floor', (r) => r.rps)} | ${ratio('floor', (r) => r.p99)} | ${ratio('reference', (r) => r.rps)} |`,
      );
    }
    const generator = [...this.samples.values()].flatMap((byTarget) => [...byTarget.values()].flat()).map((s) => s.generatorUs);
    if (generator.length) {
      this.rows.push({ what: 'load generator CPU per request (all samples)', value: `${fmt(generator, 1)} µs` });
    }
    if (this.rows.length) {
      out.push('');
      out.push('| measurement | value |');
      out.push('|---|---|');
      for (const row of this.rows) out.push(`| ${row.what} | ${row.value} |`);
    }
    out.push('');
    out.push('Median over rounds, (min–max) across rounds; ratios are taken within each round, then their median and spread.');
    for (const note of this.notes) out.push(note);
    return out.join('\n') + '\n';
  }
}
