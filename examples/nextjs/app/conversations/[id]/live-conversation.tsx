'use client';
// The live part of a conversation's page, through the client package only: events.watch pushes
// the conversation's events (each tracked by its position, so the link's reconnect after a lost
// connection or a restarted replica resumes after the last one: none missed, none twice; an
// event is also kept by its id, so a resent one is not shown again), appConversations.watch its
// status; the buttons are typed mutations.
import type { AgentEvent, AppConversation } from '@agent-control-plane/client';
import { useEffect, useState, type FormEvent } from 'react';
import { Outcome } from '@/components/form-feedback';
import { failed, type ActionResult } from '@/lib/action-result';
import { browserClient } from '@/lib/browser-client';

type Change = { status: string; path: string; diff?: { modified: string | null; original: string | null } };

export function LiveConversation({ id, initial }: { id: string; initial: AppConversation }) {
  const [events, setEvents] = useState<AgentEvent[]>([]);
  const [conversation, setConversation] = useState(initial);
  const [failure, setFailure] = useState<ActionResult | null>(null);
  const [changes, setChanges] = useState<Change[] | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const seen = new Set<string>();
    const live = browserClient.events.watch.subscribe(
      { conversation_id: id },
      {
        onData: ({ data: event }) => {
          if (seen.has(event.id)) return;
          seen.add(event.id);
          setEvents((shown) => [...shown, event]);
        },
        onError: (error) => setFailure(failed(error)),
      },
    );
    const status = browserClient.appConversations.watch.subscribe(
      { conversation_id: id },
      { onData: setConversation, onError: (error) => setFailure(failed(error)) },
    );
    return () => {
      live.unsubscribe();
      status.unsubscribe();
    };
  }, [id]);

  const act = async (call: () => Promise<unknown>) => {
    setFailure(null);
    setBusy(true);
    try {
      await call();
    } catch (error) {
      setFailure(failed(error));
    } finally {
      setBusy(false);
    }
  };
  const c = { conversation_id: id };

  async function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const text = String(new FormData(form).get('message') ?? '').trim();
    if (!text) return;
    await act(() => browserClient.appConversationActions.sendMessage.mutate({ ...c, content: [{ type: 'text', text }] }));
    form.reset();
  }

  async function showChanges() {
    await act(async () => {
      const found = await browserClient.appConversationFiles.gitChanges.query({ ...c, path: '/workspace/project' });
      const withDiffs = await Promise.all(
        found.map(async (change) => ({
          ...change,
          diff: await browserClient.appConversationFiles.gitDiff.query({ ...c, path: change.path }).catch(() => undefined),
        })),
      );
      setChanges(withDiffs);
    });
  }

  const waiting = conversation.execution_status === 'waiting_for_confirmation';
  return (
    <>
      <p id="status" data-status={conversation.execution_status ?? ''}>
        Agent: <strong>{conversation.execution_status ?? '—'}</strong> · sandbox {conversation.sandbox_status}
      </p>
      <ol id="events" className="events">
        {events.map((event) => (
          <EventItem key={event.id} event={event} />
        ))}
      </ol>
      {waiting && (
        <div id="confirmation" className="notice">
          The agent waits for your approval of its next action.{' '}
          <button
            id="approve"
            disabled={busy}
            onClick={() => act(() => browserClient.appConversationActions.respondToConfirmation.mutate({ ...c, accept: true }))}
          >
            Approve
          </button>{' '}
          <button
            id="reject"
            disabled={busy}
            onClick={() =>
              act(() =>
                browserClient.appConversationActions.respondToConfirmation.mutate({
                  ...c,
                  accept: false,
                  reason: 'Rejected in the example app',
                }),
              )
            }
          >
            Reject
          </button>
        </div>
      )}
      <form onSubmit={send}>
        <label htmlFor="message">Message the agent</label>
        <input id="message" name="message" placeholder="And add a test" />
        <button type="submit" disabled={busy}>
          Send
        </button>
      </form>
      <p>
        <button id="pause" disabled={busy} onClick={() => act(() => browserClient.appConversationActions.pause.mutate(c))}>
          Pause
        </button>{' '}
        <button id="resume" disabled={busy} onClick={() => act(() => browserClient.appConversationActions.resume.mutate(c))}>
          Resume
        </button>{' '}
        <button id="show-changes" disabled={busy} onClick={showChanges}>
          Changes
        </button>
      </p>
      {failure && <Outcome result={failure} />}
      {changes && (
        <div id="changes">
          <h2>Changes</h2>
          {changes.length === 0 && <p>No changes.</p>}
          {changes.map((change) => (
            <details key={change.path} open>
              <summary>
                {change.status} {change.path}
              </summary>
              {change.diff && <Diff before={change.diff.original ?? ''} after={change.diff.modified ?? ''} />}
            </details>
          ))}
        </div>
      )}
    </>
  );
}

/** One event as a reader wants it: who said what, the command and what it printed, the edit. */
function EventItem({ event }: { event: AgentEvent }) {
  switch (event.kind) {
    case 'MessageEvent': {
      const text = event.llm_message.content.map((part) => part.text ?? '').join('\n');
      return (
        <li className={`event message ${event.source}`} data-kind="message" data-event-id={event.id}>
          <span className="who">{event.source === 'user' ? 'You' : 'Agent'}</span> {text}
        </li>
      );
    }
    case 'ActionEvent': {
      const action = event.action ?? { kind: 'none' };
      if (action.kind === 'FileEditorAction' && typeof action.path === 'string')
        return (
          <li className="event edit" data-kind="edit" data-event-id={event.id}>
            <span className="who">Edit</span> {String(action.command ?? '')} {action.path}
            {(typeof action.new_str === 'string' || typeof action.file_text === 'string') && (
              <Diff before={String(action.old_str ?? '')} after={String(action.new_str ?? action.file_text ?? '')} />
            )}
          </li>
        );
      // The agent's last word (the finish tool's message) reads as its message.
      if (action.kind === 'FinishAction' && typeof action.message === 'string')
        return (
          <li className="event message agent" data-kind="message" data-event-id={event.id}>
            <span className="who">Agent</span> {action.message}
          </li>
        );
      if (typeof action.command === 'string')
        return (
          <li className="event command" data-kind="command" data-event-id={event.id}>
            <span className="who">$</span> <code>{action.command}</code>
          </li>
        );
      return (
        <li className="event action" data-kind="action" data-event-id={event.id}>
          <span className="who">{event.tool_name}</span> {event.summary ?? ''}
        </li>
      );
    }
    case 'ObservationEvent':
      if (event.tool_name === 'finish') return null; // the finish tool echoes the message shown with its action
      return (
        <li className="event output" data-kind="output" data-event-id={event.id}>
          <pre>{(event.observation.content ?? []).map((part) => part.text).join('\n')}</pre>
        </li>
      );
    case 'UserRejectObservation':
      return (
        <li className="event rejected" data-kind="rejected" data-event-id={event.id}>
          <span className="who">Rejected</span> {event.rejection_reason}
        </li>
      );
    case 'AgentErrorEvent':
      return (
        <li className="event error" data-kind="error" data-event-id={event.id}>
          <span className="who">Error</span> {event.error}
        </li>
      );
    default:
      return null; // state updates, system prompts and kinds of other agent-server versions
  }
}

/** A minimal line diff: removed lines, then added ones. */
function Diff({ before, after }: { before: string; after: string }) {
  const old = before ? before.split('\n') : [];
  const now = after ? after.split('\n') : [];
  const kept = new Set(old.filter((line) => now.includes(line)));
  return (
    <pre className="diff">
      {old
        .filter((line) => !kept.has(line))
        .map((line, i) => (
          <span key={`-${i}`} className="removed">{`- ${line}\n`}</span>
        ))}
      {now
        .filter((line) => !kept.has(line))
        .map((line, i) => (
          <span key={`+${i}`} className="added">{`+ ${line}\n`}</span>
        ))}
    </pre>
  );
}
