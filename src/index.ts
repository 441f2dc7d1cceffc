/**
 * Library entry (`import { verifyWebhook } from 'vigil'`): what a webhook receiver needs.
 */
export { verifyWebhook, signWebhook } from './delivery/signature.js';
export type { WebhookBody, WebhookCheck, EventType } from './domain/events.js';
export { EVENT_TITLES } from './domain/events.js';
