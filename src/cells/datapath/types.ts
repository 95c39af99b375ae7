/** What the datapath cell offers other cells (types, tokens and helpers they may import). */

// Re-exported for other cells (import a cell through its index.ts or types.ts only).
export { ctTimeoutsOf } from './ct-config.js';
export { DatapathConfigToken, DatapathProvidersToken, LinkCheckerToken, SelectedDatapathToken, sysfsLinkChecker } from './select.js';
export type { DatapathConfig, DatapathProvider, LinkChecker, SelectedDatapath } from './select.js';
