// Feedback on a conversation (POST /api/conversations/{id}/submit-feedback), kept with the
// service and owned by its author. The reference sends it, with the conversation's whole
// trajectory, to an external sharing service and answers that service's reply; nothing of a
// conversation leaves this service here, and the answer keeps the reply's shape.
import crypto from 'node:crypto';
import type { Models } from '../../../models/index.js';
import type { EventsService } from '../events/events.service.js';
import type { SandboxAccess } from '../../sandbox/index.js';

export interface Feedback {
  polarity: 'positive' | 'negative';
  permissions: 'public' | 'private';
  email: string;
  version: string;
}

export class FeedbackService {
  constructor(
    private readonly models: Models,
    private readonly access: SandboxAccess,
    private readonly events: EventsService,
  ) {}

  async submit(userId: string, conversationId: string, feedback: Feedback) {
    const conversation = await this.access.conversation(userId, conversationId);
    const id = crypto.randomBytes(16).toString('hex');
    await this.models.Feedback.create({
      _id: id,
      userId,
      conversationId: conversation._id,
      polarity: feedback.polarity,
      permissions: feedback.permissions,
      email: feedback.email || null,
      version: feedback.version || null,
      eventCount: await this.events.count(userId, { conversation_id__eq: conversation._id }),
      createdAt: new Date(),
    });
    return {
      statusCode: 200,
      body: { message: 'Thank you for your feedback. It is kept with this service and is not shared.', feedback_id: id, password: '' },
    };
  }

  /** The author's feedback on a conversation, newest first. */
  async list(userId: string, conversationId: string) {
    const records = await this.models.Feedback.find({ userId, conversationId }).lean();
    return records
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .map((r) => ({ feedback_id: r._id, polarity: r.polarity, permissions: r.permissions, created_at: r.createdAt.toISOString() }));
  }

  async removeConversation(userId: string, conversationId: string): Promise<void> {
    await this.models.Feedback.deleteMany({ userId, conversationId });
  }
}
