// A conversation's page: the stored conversation read on the server, then everything live in the
// browser (live-conversation.tsx): its events, its status, the follow-up box, pause and resume,
// the confirmation buttons and the changes view.
import { notFound } from 'next/navigation';
import { read } from '@/lib/service';
import { LiveConversation } from './live-conversation';

export default async function ConversationPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const [conversation] = await read((trpc) => trpc.appConversations.batchGet.query({ ids: [id] }));
  if (!conversation) notFound();
  return (
    <section>
      <h1 id="title">{conversation.title ?? conversation.id}</h1>
      <p className="muted">
        {conversation.selected_repository ?? 'No repository'} · {conversation.llm_model ?? 'no model'}
      </p>
      <LiveConversation id={conversation.id} initial={conversation} />
    </section>
  );
}
