import type { Connection } from 'mongoose';
import { apiKeyModel } from './api-key.model.js';
import { auditEventModel } from './audit-event.model.js';
import { automationUserModel } from './automation-user.model.js';
import { userRoleModel } from './user-role.model.js';
import { userLlmPolicyModel } from './user-llm-policy.model.js';
import { organizationModel } from './organization.model.js';
import { currentOrgModel, orgMemberModel } from './org-member.model.js';
import { orgInvitationModel } from './org-invitation.model.js';
import { orgSecretModel } from './org-secret.model.js';
import { appConversationModel } from './app-conversation.model.js';
import { startTaskModel } from './start-task.model.js';
import { startTaskQueueModel } from './start-task-queue.model.js';
import { customSecretModel } from './custom-secret.model.js';
import { deviceCodeModel } from './device-code.model.js';
import { eventBucketModel, eventLogModel, eventRecentModel } from './conversation-event.model.js';
import { feedbackModel } from './feedback.model.js';
import { llmCallModel } from './llm-call.model.js';
import { llmRouteModel } from './llm-route.model.js';
import { monthlySpendModel } from './monthly-spend.model.js';
import { dailyStartModel } from './daily-start.model.js';
import { claimModel } from './claim.model.js';
import { pendingMessageModel } from './pending-message.model.js';
import { recordListModel } from './record-list.model.js';
import { sandboxModel } from './sandbox.model.js';
import { sandboxSlotModel } from './sandbox-slot.model.js';
import { sessionModel } from './session.model.js';
import { settingsModel } from './settings.model.js';
import { webhookDeliveryModel } from './webhook-delivery.model.js';
import { webhookEndpointModel } from './webhook-endpoint.model.js';
import { webhookLaneModel } from './webhook-lane.model.js';
import { writeLockModel } from './write-lock.model.js';

export * from './api-key.model.js';
export * from './audit-event.model.js';
export * from './automation-user.model.js';
export * from './user-role.model.js';
export * from './user-llm-policy.model.js';
export * from './organization.model.js';
export * from './org-member.model.js';
export * from './org-invitation.model.js';
export * from './org-secret.model.js';
export * from './app-conversation.model.js';
export * from './start-task.model.js';
export * from './start-task-queue.model.js';
export * from './custom-secret.model.js';
export * from './device-code.model.js';
export * from './conversation-event.model.js';
export * from './feedback.model.js';
export * from './llm-call.model.js';
export * from './llm-route.model.js';
export * from './monthly-spend.model.js';
export * from './daily-start.model.js';
export * from './claim.model.js';
export * from './pending-message.model.js';
export * from './record-list.model.js';
export * from './sandbox.model.js';
export * from './sandbox-slot.model.js';
export * from './session.model.js';
export * from './settings.model.js';
export * from './webhook-delivery.model.js';
export * from './webhook-endpoint.model.js';
export * from './webhook-lane.model.js';
export * from './write-lock.model.js';

/** Binds every model to one connection, so tests can run several databases in one process. */
export function createModels(conn: Connection) {
  return {
    ApiKey: apiKeyModel(conn),
    AutomationUser: automationUserModel(conn),
    Session: sessionModel(conn),
    DeviceCode: deviceCodeModel(conn),
    Settings: settingsModel(conn),
    CustomSecret: customSecretModel(conn),
    Sandbox: sandboxModel(conn),
    SandboxSlot: sandboxSlotModel(conn),
    AppConversation: appConversationModel(conn),
    StartTask: startTaskModel(conn),
    StartTaskQueue: startTaskQueueModel(conn),
    EventLog: eventLogModel(conn),
    EventBucket: eventBucketModel(conn),
    EventRecent: eventRecentModel(conn),
    Feedback: feedbackModel(conn),
    MonthlySpend: monthlySpendModel(conn),
    DailyStart: dailyStartModel(conn),
    PendingMessage: pendingMessageModel(conn),
    Claim: claimModel(conn),
    WebhookEndpoint: webhookEndpointModel(conn),
    WebhookDelivery: webhookDeliveryModel(conn),
    WebhookLane: webhookLaneModel(conn),
    WriteLock: writeLockModel(conn),
    RecordList: recordListModel(conn),
    LlmRoute: llmRouteModel(conn),
    LlmCall: llmCallModel(conn),
    AuditEvent: auditEventModel(conn),
    UserRole: userRoleModel(conn),
    UserLlmPolicy: userLlmPolicyModel(conn),
    Organization: organizationModel(conn),
    OrgMember: orgMemberModel(conn),
    CurrentOrg: currentOrgModel(conn),
    OrgInvitation: orgInvitationModel(conn),
    OrgSecret: orgSecretModel(conn),
  };
}

export type Models = ReturnType<typeof createModels>;
