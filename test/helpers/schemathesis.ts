// Runs the schemathesis CLI (installed into the cache by scripts/setup-schemathesis.sh, which
// npm test's pretest runs) against a live OpenAPI document and reads its JSON and NDJSON
// reports. Flags and report fields: docs/schemathesis-notes.md.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SETUP_SCRIPT = fileURLToPath(new URL('../../scripts/setup-schemathesis.sh', import.meta.url));
/** Reports land in <repository>/test-results/schemathesis/<name>/ (git-ignored). */
export const SCHEMATHESIS_RESULTS_DIR = fileURLToPath(new URL('../../test-results/schemathesis/', import.meta.url));

/** The checks the fuzz test must pass (issue 11). */
export const CONTRACT_CHECKS = ['not_a_server_error', 'status_code_conformance', 'response_schema_conformance', 'content_type_conformance'];

export interface SchemathesisOptions {
  /** Names the report folder: test-results/schemathesis/<name>/ (emptied first). */
  name: string;
  /** URL of the OpenAPI document, e.g. http://127.0.0.1:PORT/api/openapi.json */
  schemaUrl: string;
  headers?: Record<string, string>;
  checks?: string[];
  /** Cases per operation and phase (-n). */
  maxExamples: number;
  /** Per-request bound: a slower answer fails the case (it is what catches a hang). */
  requestTimeoutSeconds?: number;
  seed?: number;
  /** Extra CLI arguments, e.g. ['--phases', 'fuzzing'] or ['--include-path-regex', '^/api/settings']. */
  extraArgs?: string[];
  /** Kills the run after this long (the CLI has no hard cap without --max-time's repeat-until-spent). */
  timeoutMs?: number;
}

export interface SchemathesisFailure {
  code: string;
  title: string;
  count: number;
}

export interface SchemathesisResult {
  /** 0 no failures, 1 failures, 2 the document could not be loaded. */
  exitCode: number;
  operations: { total: number; selected: number; tested: number; errored: number; skipped: number };
  testCases: { generated: number; withFailures: number; uniqueFailures: number; errored: number };
  /** Checks run, summed over every case (from the NDJSON events). */
  checksRun: number;
  failures: SchemathesisFailure[];
  /** The CLI's own text output: the failures with their curl reproductions (secrets filtered). */
  output: string;
  reportDir: string;
}

/** Path of the schemathesis CLI; installs it first if the cache lacks it. */
export function schemathesisCli(): string {
  const stdout = execFileSync('bash', [SETUP_SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const cli = stdout.trim().split('\n').pop();
  if (!cli) throw new Error(`${SETUP_SCRIPT} printed no CLI path`);
  return cli;
}

export async function runSchemathesis(options: SchemathesisOptions): Promise<SchemathesisResult> {
  const cli = schemathesisCli();
  // The CLI also writes .hypothesis/ and .schemathesis/ into its working directory: this one.
  const workDir = path.join(SCHEMATHESIS_RESULTS_DIR, options.name.replace(/[^A-Za-z0-9._-]+/g, '-'));
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const jsonPath = path.join(workDir, 'report.json');
  const ndjsonPath = path.join(workDir, 'events.ndjson');
  const args = [
    'run',
    options.schemaUrl,
    '--checks',
    (options.checks ?? CONTRACT_CHECKS).join(','),
    '--max-examples',
    String(options.maxExamples),
    '--request-timeout',
    String(options.requestTimeoutSeconds ?? 10),
    '--workers',
    '1',
    '--no-color',
    '--report',
    'json,ndjson,junit',
    '--report-dir',
    workDir,
    '--report-json-path',
    jsonPath,
    '--report-ndjson-path',
    ndjsonPath,
    ...(options.seed === undefined ? [] : ['--seed', String(options.seed)]),
    ...Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    ...(options.extraArgs ?? []),
  ];
  const { exitCode, output } = await new Promise<{ exitCode: number; output: string }>((resolve) => {
    execFile(cli, args, { cwd: workDir, timeout: options.timeoutMs ?? 600_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ exitCode: code, output: `${stdout}${stderr}` });
    });
  });
  // Killed at its timeout, the CLI leaves no report or a truncated one.
  if (!fs.existsSync(jsonPath) || fs.statSync(jsonPath).size === 0) {
    throw new Error(`schemathesis wrote no report (exit ${exitCode}, timeout ${options.timeoutMs ?? 600_000} ms):\n${output.slice(-4000)}`);
  }
  const report = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
  return {
    exitCode,
    operations: report.operations,
    testCases: {
      generated: report.test_cases.generated,
      withFailures: report.test_cases.with_failures,
      uniqueFailures: report.test_cases.unique_failures,
      errored: report.test_cases.errored,
    },
    checksRun: countChecks(ndjsonPath),
    failures: (report.failures as Array<{ code: string; title: string; count: number }>).map(({ code, title, count }) => ({
      code,
      title,
      count,
    })),
    output,
    reportDir: workDir,
  };
}

function countChecks(ndjsonPath: string): number {
  let total = 0;
  for (const line of fs.readFileSync(ndjsonPath, 'utf8').split('\n')) {
    if (!line.includes('"ScenarioFinished"')) continue;
    const checks: Record<string, unknown[]> = JSON.parse(line).ScenarioFinished.recorder?.checks ?? {};
    for (const perCase of Object.values(checks)) total += perCase.length;
  }
  return total;
}
