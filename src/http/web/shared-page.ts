// A public conversation's page (/shared/conversations/{id}, docs/organizations.md "Sharing"): what
// a link opens in any browser, signed in or not — the title, then the messages, the agent's
// commands and what they printed, read-only, from the same reads as /api/shared-conversations and
// /api/shared-events/search. Not public (or no such conversation), it is a 404 saying so, the
// same for both. Static HTML: no script, no external asset, no referrer sent onwards.
import crypto from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../trpc/context.js';
import { chargeClient, factsOf } from '../pipeline.js';
import { writeFailure } from '../rest/answers.js';
import { escapeHtml, pageHeaders } from './html.js';

export const SHARED_PAGE = '/shared/conversations/:conversationId';

/** The events shown at most (a longer conversation says how many more there are). */
const MAX_EVENTS = 1_000;
/** A text shown at most (a command's output can be megabytes). */
const MAX_TEXT = 20_000;

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f5;padding:.6rem;border-radius:4px;margin:.3rem 0}
.event{border-left:3px solid #d4d4d8;padding:.2rem .8rem;margin:.8rem 0}.user{border-color:#2563eb}.agent{border-color:#16a34a}
.error{border-color:#dc2626}.who{font-size:.8rem;color:#71717a;text-transform:uppercase}`;

const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${crypto.createHash('sha256').update(STYLE).digest('base64')}'`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

type Shown = { who: string; cls: string; parts: { label?: string; text: string; pre: boolean }[] };

export function sharedPage(deps: Deps) {
  const sharing = deps.services.sharing;
  return (req: Request, res: Response, next: NextFunction): void => {
    pageHeaders(res, 'no-referrer'); // uncached: made private, it is gone at once
    res.setHeader('content-security-policy', CSP);
    const id = String(req.params.conversationId ?? '');
    // No credential here: each read the page makes is its reader's address's to pay (a 429 past it).
    const charge = () => chargeClient(deps, req, 1, false);
    (async () => {
      charge();
      const [conversation] = /^[0-9a-f-]{32,36}$/i.test(id) ? await sharing.conversations([id]) : [null];
      if (!conversation) {
        res.status(404);
        return page('Not shared', '<p id="not-shared">This conversation does not exist or is not shared.</p>');
      }
      const events: Record<string, unknown>[] = [];
      let pageId: string | null = null;
      do {
        const found: { items: Record<string, unknown>[]; next_page_id: string | null } = await sharing.searchEvents(conversation.id, {
          sort_order: 'TIMESTAMP',
          limit: 100,
          ...(pageId ? { page_id: pageId } : {}),
        });
        events.push(...found.items);
        pageId = found.next_page_id;
        if (pageId && events.length < MAX_EVENTS) charge();
      } while (pageId && events.length < MAX_EVENTS);
      const shown = events.slice(0, MAX_EVENTS).flatMap((event) => {
        const one = shownOf(event);
        return one ? [one] : [];
      });
      const title = conversation.title ?? 'A shared conversation';
      return page(
        title,
        `<h1 id="title">${escapeHtml(title)}</h1>
  <p class="who">${escapeHtml(conversation.selected_repository ?? 'no repository')} · ${escapeHtml(conversation.created_at)}</p>
  <main id="events">${shown.map(render).join('\n')}</main>
  ${pageId ? '<p id="more">Later events are not shown here.</p>' : ''}`,
      );
    })()
      .then((html) => res.type('html').send(html))
      .catch((error: unknown) =>
        error instanceof AppError ? writeFailure(res, error, undefined, factsOf(req).log, deps.config.http.maxBodySize) : next(error),
      );
  };
}

const page = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>${STYLE}</style></head>
<body>
  ${body}
</body>
</html>`;

const render = (shown: Shown) =>
  `<section class="event ${shown.cls}"><div class="who">${escapeHtml(shown.who)}</div>${shown.parts
    .map(
      (p) =>
        `${p.label ? `<div class="who">${escapeHtml(p.label)}</div>` : ''}${p.pre ? `<pre>${clip(p.text)}</pre>` : `<p>${clip(p.text)}</p>`}`,
    )
    .join('')}</section>`;

const clip = (text: string) =>
  escapeHtml(text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}\n… (${text.length - MAX_TEXT} more characters)` : text);

const textsOf = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .map((c) => (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
        .filter(Boolean)
        .join('\n')
    : '';

/** What a reader sees of an event; state updates, system prompts and the like are not shown. */
function shownOf(event: Record<string, unknown>): Shown | null {
  const source = String(event.source ?? '');
  switch (event.kind) {
    case 'MessageEvent': {
      const text = textsOf((event.llm_message as { content?: unknown } | undefined)?.content);
      return text
        ? { who: source === 'user' ? 'user' : 'agent', cls: source === 'user' ? 'user' : 'agent', parts: [{ text, pre: false }] }
        : null;
    }
    case 'ActionEvent': {
      const action = (event.action ?? {}) as Record<string, unknown>;
      const parts: Shown['parts'] = [];
      const thought = textsOf(event.thought);
      if (thought) parts.push({ text: thought, pre: false });
      if (typeof action.command === 'string') parts.push({ label: String(event.tool_name ?? 'command'), text: action.command, pre: true });
      else if (typeof action.message === 'string') parts.push({ text: action.message, pre: false });
      else if (typeof action.path === 'string')
        parts.push({ label: String(event.tool_name ?? action.kind ?? 'tool'), text: action.path, pre: true });
      else if (typeof event.summary === 'string') parts.push({ text: event.summary, pre: false });
      return parts.length ? { who: 'agent', cls: 'agent', parts } : null;
    }
    case 'ObservationEvent': {
      const text = textsOf((event.observation as { content?: unknown } | undefined)?.content);
      return text ? { who: `${String(event.tool_name ?? 'tool')} output`, cls: '', parts: [{ text, pre: true }] } : null;
    }
    case 'UserRejectObservation':
      return { who: 'rejected', cls: 'error', parts: [{ text: String(event.rejection_reason ?? ''), pre: false }] };
    case 'AgentErrorEvent':
    case 'ConversationErrorEvent':
      return { who: 'error', cls: 'error', parts: [{ text: String(event.error ?? event.detail ?? ''), pre: true }] };
    default:
      return null;
  }
}
