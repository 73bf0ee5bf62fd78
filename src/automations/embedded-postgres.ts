// AUTOMATIONS=on without AUTOMATION_DB_URL: the automation service's PostgreSQL, run here like
// the embedded FerretDB. Debian's server programs (scripts/setup-postgres.sh: the installed
// ones, or Debian's package unpacked into the cache), a cluster in DATA_DIR/automations/postgres
// made on the first start, listening on 127.0.0.1:AUTOMATION_DB_PORT only (the automation
// service's migrations connect by TCP), password-only, started again with backoff whenever it
// exits. The password is made at the first start and kept owner-only beside the cluster.
// PostgreSQL refuses to run as root: a root service runs it in a user namespace as `nobody`
// (unshare), which maps back to root outside, so the cluster stays root's, in root's folders.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { runSetupScript, supervise, type Supervised } from '../processes.js';

const DB_USER = 'automation';
const DB_NAME = 'postgres';
const READY_LINE = /database system is ready to accept connections/;

export interface EmbeddedPostgresOptions {
  port: number;
  dataDir: string;
  cacheDir: string;
  log: Logger;
}

export interface EmbeddedPostgres extends Supervised {
  /** The database's URL (SQLAlchemy asyncpg form) once the server accepts connections; null if it cannot run here. */
  url(): Promise<string | null>;
}

interface Owner {
  uid: number;
  gid: number;
}

export function startEmbeddedPostgres(options: EmbeddedPostgresOptions): EmbeddedPostgres {
  const { log } = options;
  const home = path.join(options.dataDir, 'automations');
  const cluster = path.join(home, 'postgres');
  const passwordFile = path.join(home, 'postgres.password');
  const owner = process.getuid?.() === 0 ? nobody() : null;
  let waiting: ((url: string | null) => void)[] = [];
  let readyUrl: string | null = null;
  const settle = (url: string | null) => {
    readyUrl = url;
    for (const resolve of waiting) resolve(url);
    waiting = [];
  };

  const supervised = supervise({
    start: async () => {
      readyUrl = null;
      const bin = await serverPrograms(options);
      if (!bin) return (settle(null), null);
      const password = await ensureCluster(bin, cluster, passwordFile, owner, log);
      if (!password) return (settle(null), null);
      const child = spawn(
        ...asOwner(owner, path.join(bin, 'postgres'), [
          '-D',
          cluster,
          '-p',
          String(options.port),
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'unix_socket_directories=',
        ]),
        { env: withLibraries(bin), stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const url = `postgresql+asyncpg://${DB_USER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${DB_NAME}`;
      let said = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        if (readyUrl) return;
        said = (said + chunk.toString()).slice(-4000);
        if (READY_LINE.test(said)) {
          log.info({ port: options.port, pid: child.pid }, 'automation database (PostgreSQL) ready');
          settle(url);
        }
      });
      return child;
    },
    exited: (code, signal, lastLine) =>
      log.warn({ code, signal, last: lastLine.slice(0, 500) }, 'the automation database exited; starting it again'),
    // SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client to leave).
    stopSignal: 'SIGINT',
    graceMs: 10_000,
  });

  return {
    url: () => (readyUrl ? Promise.resolve(readyUrl) : new Promise((resolve) => waiting.push(resolve))),
    async stop() {
      await supervised.stop();
      settle(null);
    },
  };
}

async function serverPrograms(options: EmbeddedPostgresOptions): Promise<string | null> {
  const { provided, failure } = await runSetupScript(
    'setup-postgres.sh',
    [],
    { ...process.env, AGENT_CP_CACHE_DIR: options.cacheDir },
    { work: /downloading/, onWork: () => options.log.info("fetching Debian's PostgreSQL into the cache for the automation database") },
  );
  if (provided) return provided;
  options.log.error({ last: failure }, 'no PostgreSQL for the automation database (install postgresql or set AUTOMATION_DB_URL)');
  return null;
}

/** The cluster's password, after making the cluster if there is none yet; null when initdb failed (logged). */
async function ensureCluster(bin: string, cluster: string, passwordFile: string, owner: Owner | null, log: Logger): Promise<string | null> {
  if (fs.existsSync(path.join(cluster, 'PG_VERSION')) && fs.existsSync(passwordFile)) return fs.readFileSync(passwordFile, 'utf8').trim();
  // A cluster cut short (no PG_VERSION, or no password kept) is made again.
  fs.rmSync(cluster, { recursive: true, force: true });
  fs.mkdirSync(cluster, { recursive: true, mode: 0o700 });
  const password = crypto.randomBytes(24).toString('base64url');
  // initdb reads the password from a file; it is gone once initdb ends.
  const pwfile = path.join(cluster, '..', `.initdb-${process.pid}`);
  fs.writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  const args = ['-D', cluster, '-U', DB_USER, '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C'];
  const outcome = await new Promise<{ code: number | null; said: string }>((resolve) => {
    const child = spawn(...asOwner(owner, path.join(bin, 'initdb'), args), {
      env: withLibraries(bin),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-2000)));
    child.once('error', (error) => resolve({ code: null, said: error.message }));
    child.once('exit', (code) => resolve({ code, said }));
  });
  fs.rmSync(pwfile, { force: true });
  if (outcome.code !== 0) {
    log.error({ code: outcome.code, last: outcome.said.trim().split('\n').pop() }, 'the automation database could not be made (initdb)');
    return null;
  }
  fs.writeFileSync(passwordFile, password + '\n', { mode: 0o600 });
  log.info({ cluster }, 'made the automation database (PostgreSQL cluster)');
  return password;
}

/** The command that runs `program` not as root (from root: in a user namespace, as `owner` there), for spawn. */
function asOwner(owner: Owner | null, program: string, args: string[]): [string, string[]] {
  if (!owner) return [program, args];
  // Without --fork: unshare becomes the program, so its pid and signals are the server's.
  return ['unshare', ['--user', `--map-user=${owner.uid}`, `--map-group=${owner.gid}`, '--', program, ...args]];
}

/** Debian's package unpacked into the cache brings libpq beside it (usr/lib/<arch>). */
function withLibraries(bin: string): NodeJS.ProcessEnv {
  const lib = path.resolve(bin, '..', '..', '..');
  const arch = fs.existsSync(lib) ? fs.readdirSync(lib).find((name) => name.endsWith('-linux-gnu')) : undefined;
  const unpacked = arch && !lib.startsWith('/usr/');
  return unpacked ? { ...process.env, LD_LIBRARY_PATH: path.join(lib, arch) } : process.env;
}

/** `nobody` from the passwd file (65534 if it is not there): initdb asks for its user's name. */
function nobody(): Owner {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) };
}
