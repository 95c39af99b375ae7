/** Structured logging with pino: one root logger, a child per module (`module` field). */
import { pino, type Logger } from 'pino';
import { token } from './token.js';

export type { Logger } from 'pino';

/** Token for the module's logger. */
export const LoggerToken = token<Logger>('Logger');

/** The default root logger: JSON lines to stderr, level from CELLIUM_LOG_LEVEL (default info). */
export function defaultLogger(): Logger {
  return pino({ name: 'cellium', level: process.env.CELLIUM_LOG_LEVEL ?? 'info' }, pino.destination(2));
}

/** A logger that drops everything (tests, embedding tools that do not want logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
