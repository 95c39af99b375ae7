/**
 * The agent's state directory (`--state-dir`), shared by every cell that keeps state on disk:
 * endpoints write `<state-dir>/<id>/`, the identity allocator `<state-dir>/identities.json`, the
 * policy repository `<state-dir>/policies.json`.
 * One small config cell so the flag is declared once and injected wherever it is needed.
 */
export * from './cell.js';
