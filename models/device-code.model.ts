import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One device authorization request (the CLI's login, RFC 8628). Neither code is stored: the
// record is found by the SHA-256 of the device code (its _id) or of the normalised user code.
// `status` moves pending → approved | denied → consumed (approved, once its key was handed
// out), each step a conditional update, so every replica agrees and a code works once.
export const DeviceCodeSchema = new Schema(
  {
    _id: { type: String, required: true },
    userCodeHash: { type: String, required: true },
    status: { type: String, required: true, enum: ['pending', 'approved', 'denied', 'consumed'] },
    // Who asked, as shown to the person approving: the name the client gave, its user agent and address.
    clientName: { type: String, default: null },
    userAgent: { type: String, default: null },
    requestedFrom: { type: String, default: null },
    // The user who approved or denied it.
    userId: { type: String, default: null },
    // Seconds a device must wait between polls; raised by 5 at every poll that came too soon.
    interval: { type: Number, required: true },
    lastPolledAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
    decidedAt: { type: Date, default: null },
  },
  { versionKey: false, strict: true, collection: 'device_codes' },
);
// The verification page and the approval find a request by its user code; two pending ones never share one.
DeviceCodeSchema.index({ userCodeHash: 1 }, { unique: true });
// Housekeeping: requests long expired are removed at the next request.
DeviceCodeSchema.index({ expiresAt: 1 });

export const deviceCodeModel = (conn: Connection) => conn.model('DeviceCode', DeviceCodeSchema);
export type DeviceCodeModel = ReturnType<typeof deviceCodeModel>;
/** A stored device authorization request as read with lean(). */
export type DeviceCodeRecord = InferSchemaType<typeof DeviceCodeSchema>;
