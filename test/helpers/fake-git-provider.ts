// A small fake of the GitHub, GitLab and Bitbucket "current user" endpoints on 127.0.0.1,
// so token validation runs its production HTTP path against a real server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeGitProvider {
  url: string;
  /** Tokens the fake accepts (Bearer value, or "user:password" for Basic). */
  validTokens: Set<string>;
  /** When set, every request answers this status (e.g. 503 for an outage). */
  failWith: number | null;
  /** Delay before answering (slow-provider and shutdown tests). */
  delayMs: number;
  /** Pull request states by "owner/repo#number" (GitHub's /repos/{repo}/pulls/{n}). */
  pullStates: Map<string, 'open' | 'closed'>;
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

const USER_PATHS = new Set(['/user', '/api/v3/user', '/api/v4/user', '/2.0/user']);

export async function startFakeGitProvider(): Promise<FakeGitProvider> {
  const fake: Omit<FakeGitProvider, 'url' | 'close'> = {
    validTokens: new Set(),
    failWith: null,
    delayMs: 0,
    pullStates: new Map(),
    requests: [],
  };
  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    // Recorded on arrival, so a test can tell a slow answer is under way.
    fake.requests.push({ path, authorization: req.headers.authorization });
    if (fake.delayMs) await new Promise((r) => setTimeout(r, fake.delayMs));
    res.setHeader('content-type', 'application/json');
    if (fake.failWith) {
      res.writeHead(fake.failWith).end('{"message":"unavailable"}');
      return;
    }
    const pull = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/.exec(path);
    const pullState = pull ? fake.pullStates.get(`${pull[1]}#${pull[2]}`) : undefined;
    if (!USER_PATHS.has(path) && !pullState) {
      res.writeHead(404).end('{"message":"Not Found"}');
      return;
    }
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ')
      ? auth.slice(7)
      : auth.startsWith('Basic ')
        ? Buffer.from(auth.slice(6), 'base64').toString()
        : '';
    if (!fake.validTokens.has(token)) {
      res.writeHead(401).end('{"message":"Bad credentials"}');
      return;
    }
    res.writeHead(200).end(pullState ? JSON.stringify({ number: Number(pull![2]), state: pullState }) : '{"login":"octocat","id":1}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
