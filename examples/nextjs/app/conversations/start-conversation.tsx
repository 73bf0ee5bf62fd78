'use client';
// Starts a conversation from the browser and follows its start task live: the mutation
// answers at once with a WORKING task, then the watchStartTask subscription (server-sent
// events) pushes each step until READY or ERROR.
import { START_TASK_STEPS, type AppConversationStartTask, type ProviderType, type StartTaskStatus } from '@agent-control-plane/client';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useState, type FormEvent } from 'react';
import { FieldErrors, Outcome } from '@/components/form-feedback';
import { failed, type ActionResult } from '@/lib/action-result';
import { browserClient } from '@/lib/browser-client';

export function StartConversation() {
  const router = useRouter();
  const [task, setTask] = useState<AppConversationStartTask | null>(null);
  const [failure, setFailure] = useState<ActionResult | null>(null);
  const [starting, setStarting] = useState(false);

  // Follow the task until it ends; the subscription closes itself after READY or ERROR.
  useEffect(() => {
    if (!task || task.status === 'READY' || task.status === 'ERROR') return;
    const subscription = browserClient.appConversations.watchStartTask.subscribe(
      { task_id: task.id },
      {
        onData: (snapshot) => {
          setTask(snapshot);
          if (snapshot.status === 'READY') router.refresh();
        },
        onError: (error) => setFailure(failed(error)),
      },
    );
    return () => subscription.unsubscribe();
  }, [task?.id]); // once per task, not per snapshot

  async function start(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const text = (name: string) => String(form.get(name) ?? '').trim() || null;
    setFailure(null);
    setTask(null);
    setStarting(true);
    try {
      const message = text('message');
      setTask(
        await browserClient.appConversations.start.mutate({
          selected_repository: text('repository'),
          selected_branch: text('branch'),
          git_provider: text('repository') ? (form.get('git_provider') as ProviderType) : null,
          initial_message: message ? { content: [{ type: 'text', text: message }] } : null,
        }),
      );
    } catch (error) {
      setFailure(failed(error));
    } finally {
      setStarting(false);
    }
  }

  const reached = task ? (START_TASK_STEPS as readonly StartTaskStatus[]).indexOf(task.status) : -1;
  const following = task !== null && task.status !== 'READY' && task.status !== 'ERROR';
  return (
    <>
      <form onSubmit={start}>
        <label htmlFor="repository">Repository (owner/name, optional)</label>
        <input id="repository" name="repository" placeholder="acme/widgets" />
        <FieldErrors errors={failure?.fieldErrors ?? {}} field="selected_repository" />
        <label htmlFor="git_provider">Its git provider</label>
        <select id="git_provider" name="git_provider" defaultValue="github">
          <option value="github">GitHub</option>
          <option value="gitlab">GitLab</option>
          <option value="bitbucket">Bitbucket</option>
        </select>
        <label htmlFor="branch">Branch (optional)</label>
        <input id="branch" name="branch" placeholder="main" />
        <label htmlFor="message">First message</label>
        <input id="message" name="message" placeholder="Fix the failing test" />
        <FieldErrors errors={failure?.fieldErrors ?? {}} field="initial_message" />
        {failure && <Outcome result={failure} />}
        <button type="submit" disabled={starting || following}>
          Start conversation
        </button>
      </form>
      {task && (
        <div id="start-task" data-status={task.status}>
          <h2>Start task</h2>
          <ol className="steps">
            {START_TASK_STEPS.map((step, index) => (
              <li key={step} className={index < reached || task.status === 'READY' ? 'done' : index === reached ? 'current' : ''}>
                {step}
              </li>
            ))}
          </ol>
          {task.status === 'READY' && (
            <p className="notice ok">
              Conversation <Link href={`/conversations/${task.app_conversation_id}`}>{task.app_conversation_id}</Link> is ready.
            </p>
          )}
          {task.status === 'ERROR' && <p className="notice error">The start failed: {task.detail}</p>}
        </div>
      )}
    </>
  );
}
