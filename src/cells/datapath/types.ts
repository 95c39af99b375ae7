/** What the datapath cell offers other cells: types and tokens (its functions through index.ts). */

// Re-exported for other cells (import a cell through its index.ts or types.ts only).
export { DatapathConfigToken, DatapathProvidersToken, SelectedDatapathToken } from './select.js';
export type { DatapathConfig, DatapathProvider, SelectedDatapath } from './select.js';
export { LinkCheckerToken, type LinkChecker } from '../../datapath/types.js';
