/** Answers whose body is already JSON text (the status collector's cached answer, a CNI result), sent as they are. */
import type { Response } from 'express';

/** Sends `json` (JSON text) with `status`: no serialization, no charset negotiation. */
export function sendJsonText(res: Response, status: number, json: string, headers: Readonly<Record<string, string>> = {}): void {
  res.status(status).set(headers);
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}
