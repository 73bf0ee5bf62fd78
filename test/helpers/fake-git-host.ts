// A fake self-hosted GitHub (GitHub Enterprise) on 127.0.0.1: real bare repositories served over
// git's smart HTTP protocol by `git http-backend` (run as CGI), plus the few /api/v3 endpoints the
// control plane calls. Tests can then clone with the system git, token and all, exactly as a
// sandbox would against a real GHE, without any network access or a real account.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { allowForSandboxes } from './sandbox-host-ports.js';

const execFileAsync = promisify(execFile);

export interface FakeGitHost {
  /** Base URL, e.g. http://127.0.0.1:1234; clone URLs are `${url}/<owner>/<repo>.git`, the API is `${url}/api/v3`. */
  url: string;
  /** Tokens accepted as the Basic password (git, any username) or the Bearer value (API). */
  validTokens: Set<string>;
  /** Every request, git and API alike, in arrival order. */
  requests: { path: string; authorization: string | undefined }[];
  /** Creates bare repo `<owner>/<repo>.git`; `main` has one commit with `files`, each extra branch one more commit on top. */
  createRepo(
    owner: string,
    repo: string,
    files: Record<string, string>,
    opts?: { branches?: Record<string, Record<string, string>> },
  ): Promise<void>;
  close(): Promise<void>;
}

const NAME = /^(?!\.\.?$)[A-Za-z0-9._-]+$/;
const GIT_PATH = /^\/([^/]+)\/([^/]+)\.git(\/.*)?$/;
const API_REPO_PATH = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/?$/;

/** Environment for every git the fake runs: no user or system config, so nothing on the host leaks in. */
function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: os.tmpdir(),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    ...extra,
  };
}

async function git(cwd: string, ...args: string[]): Promise<void> {
  await execFileAsync('git', ['-c', 'user.name=Fake Git Host', '-c', 'user.email=fake@example.invalid', ...args], {
    cwd,
    env: gitEnv(),
  });
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    const target = path.resolve(dir, name);
    if (!target.startsWith(dir + path.sep)) throw new Error(`file path escapes the repository: ${name}`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, content);
  }
}

/** The token a request carries: the Basic password or the Bearer value; '' when none. */
function tokenOf(authorization: string | undefined, scheme: 'Basic' | 'Bearer'): string {
  const auth = authorization ?? '';
  if (!auth.startsWith(scheme + ' ')) return '';
  const value = auth.slice(scheme.length + 1).trim();
  if (scheme === 'Bearer') return value;
  const decoded = Buffer.from(value, 'base64').toString();
  const colon = decoded.indexOf(':');
  return colon < 0 ? '' : decoded.slice(colon + 1);
}

function basicUser(authorization: string | undefined): string {
  const decoded = Buffer.from((authorization ?? '').slice(6), 'base64').toString();
  return decoded.slice(0, Math.max(0, decoded.indexOf(':'))) || 'git';
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}

/** Runs `git http-backend` as a CGI script for one request and relays its answer. */
function serveGit(projectRoot: string, req: http.IncomingMessage, res: http.ServerResponse, pathInfo: string, query: string): void {
  const env = gitEnv({
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    PATH_INFO: pathInfo,
    QUERY_STRING: query,
    REQUEST_METHOD: req.method ?? 'GET',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: basicUser(req.headers.authorization),
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  });
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
  // http-backend reads these from the CGI environment: gzip'd request bodies and the protocol v2 request.
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') env.HTTP_GIT_PROTOCOL = protocol;

  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.on('error', () => {}); // http-backend may exit before reading the whole body
  req.pipe(child.stdin);

  let head = Buffer.alloc(0);
  let headersSent = false;
  const onData = (chunk: Buffer) => {
    if (headersSent) return;
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const [end, sepLength] = crlf >= 0 && (lf < 0 || crlf < lf) ? [crlf, 4] : [lf, 2];
    if (end < 0) return;
    headersSent = true;
    child.stdout.off('data', onData);
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + sepLength));
    child.stdout.pipe(res);
  };
  child.stdout.on('data', onData);
  child.on('error', (err) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`git http-backend failed to start: ${err.message}\n`);
  });
  child.on('close', (code) => {
    if (headersSent) return;
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`git http-backend exited with ${code} before its headers:\n${stderr}`);
  });
}

export async function startFakeGitHost(): Promise<FakeGitHost> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-fake-git-host-'));
  const projectRoot = path.join(root, 'repos');
  fs.mkdirSync(projectRoot);
  const validTokens = new Set<string>();
  const requests: FakeGitHost['requests'] = [];
  const repoDir = (owner: string, repo: string) => path.join(projectRoot, owner, `${repo}.git`);
  const repoExists = (owner: string, repo: string) => NAME.test(owner) && NAME.test(repo) && fs.existsSync(repoDir(owner, repo));

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let pathname = url.pathname;
    try {
      pathname = decodeURIComponent(pathname);
    } catch {
      // keep it encoded; it will simply not match any route
    }
    requests.push({ path: pathname, authorization: req.headers.authorization });

    if (pathname === '/api/v3' || pathname.startsWith('/api/v3/')) {
      req.resume();
      if (!validTokens.has(tokenOf(req.headers.authorization, 'Bearer'))) return json(res, 401, { message: 'Bad credentials' });
      if (req.method === 'GET' && pathname === '/api/v3/user') return json(res, 200, { login: 'octocat', id: 1 });
      const repoMatch = API_REPO_PATH.exec(pathname);
      if (req.method === 'GET' && repoMatch && repoExists(repoMatch[1]!, repoMatch[2]!)) {
        return json(res, 200, { full_name: `${repoMatch[1]}/${repoMatch[2]}`, default_branch: 'main', private: true });
      }
      return json(res, 404, { message: 'Not Found' });
    }

    if (GIT_PATH.test(pathname)) {
      if (!validTokens.has(tokenOf(req.headers.authorization, 'Basic'))) {
        req.resume();
        res.writeHead(401, { 'www-authenticate': 'Basic realm="git"', 'content-type': 'text/plain' }).end('Unauthorized\n');
        return;
      }
      serveGit(projectRoot, req, res, pathname, url.search.slice(1));
      return;
    }

    req.resume();
    json(res, 404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const disallow = allowForSandboxes((server.address() as AddressInfo).port);
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    validTokens,
    requests,
    async createRepo(owner, repo, files, opts = {}) {
      if (!NAME.test(owner) || !NAME.test(repo)) throw new Error(`bad owner/repo name: ${owner}/${repo}`);
      const work = fs.mkdtempSync(path.join(root, 'work-'));
      try {
        await git(work, 'init', '-q', '-b', 'main');
        writeFiles(work, files);
        await git(work, 'add', '-A');
        await git(work, '-c', 'commit.gpgsign=false', 'commit', '-q', '--allow-empty', '-m', 'Initial commit');
        for (const [branch, branchFiles] of Object.entries(opts.branches ?? {})) {
          await git(work, 'checkout', '-q', '-b', branch, 'main');
          writeFiles(work, branchFiles);
          await git(work, 'add', '-A');
          await git(work, '-c', 'commit.gpgsign=false', 'commit', '-q', '--allow-empty', '-m', `Commit on ${branch}`);
        }
        const bare = repoDir(owner, repo);
        fs.mkdirSync(path.dirname(bare), { recursive: true });
        // init + push (rather than clone --bare) so the bare HEAD is main whatever was checked out last.
        await git(projectRoot, 'init', '-q', '--bare', '-b', 'main', bare);
        await git(work, 'push', '-q', bare, '--all');
      } finally {
        fs.rmSync(work, { recursive: true, force: true });
      }
    },
    async close() {
      disallow();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
