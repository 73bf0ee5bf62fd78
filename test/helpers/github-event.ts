// A GitHub push as the automation service takes it at /api/automation/v1/events/{org}/github:
// `{payload}`, signed with AUTOMATION_WEBHOOK_SECRET (X-Hub-Signature-256). Upstream's matcher
// needs the push's `before`.
import crypto from 'node:crypto';

/** An automation trigger on a push to a repository whose full name matches `glob` (what githubPush sends). */
export function onGithubPush(glob: string) {
  return { type: 'event', source: 'github', on: 'push', filter: `glob(repository.full_name, '${glob}')` };
}

export function githubPush(fullName: string): string {
  return JSON.stringify({
    payload: {
      ref: 'refs/heads/main',
      before: 'a'.repeat(40),
      after: 'b'.repeat(40),
      commits: [{ id: 'b'.repeat(40), message: 'fix', author: { name: 'octo' } }],
      repository: { id: 1, name: fullName.split('/')[1], full_name: fullName, private: true },
      sender: { id: 2, login: 'octo' },
    },
  });
}

/** Posts an event to the service's events route; `signature` defaults to the body's correct one. */
export function deliverGithubEvent(
  baseUrl: string,
  orgId: string,
  body: string,
  opts: { secret: string; signature?: string; delivery?: string },
): Promise<Response> {
  const signature = opts.signature ?? `sha256=${crypto.createHmac('sha256', opts.secret).update(body).digest('hex')}`;
  return fetch(`${baseUrl}/api/automation/v1/events/${orgId}/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-github-delivery': opts.delivery ?? crypto.randomUUID(),
    },
    body,
  });
}
