import Link from 'next/link';
import { AutoRefresh } from '@/components/auto-refresh';
import { read } from '@/lib/service';
import { StartConversation } from './start-conversation';

export default async function ConversationsPage() {
  const { items: conversations } = await read((trpc) => trpc.appConversations.search.query({ limit: 20 }));
  return (
    <>
      <section>
        <h1>Start a conversation</h1>
        <StartConversation />
      </section>
      <section>
        <h2>Conversations</h2>
        <AutoRefresh active={conversations.some((c) => c.sandbox_status === 'STARTING')} />
        <table>
          <thead>
            <tr>
              <th>Conversation</th>
              <th>Repository</th>
              <th>Sandbox</th>
              <th>Agent</th>
              <th>Started</th>
            </tr>
          </thead>
          <tbody id="conversations">
            {conversations.length === 0 && (
              <tr>
                <td colSpan={5}>No conversations yet.</td>
              </tr>
            )}
            {conversations.map((conversation) => (
              <tr key={conversation.id} data-conversation={conversation.id}>
                <td>
                  <Link href={`/conversations/${conversation.id}`}>{conversation.title ?? conversation.id}</Link>
                </td>
                <td>{conversation.selected_repository ?? '—'}</td>
                <td className="status">{conversation.sandbox_status}</td>
                <td className="status">{conversation.execution_status ?? '—'}</td>
                <td>{new Date(conversation.created_at).toLocaleString('en-GB', { timeZone: 'UTC' })}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}
