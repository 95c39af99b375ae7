/**
 * The CNI server cell (module `cni-server`): serves `POST /v1/cellium/cni`, where the cellium-cni
 * shim forwards ADD, DEL, CHECK, STATUS and GC (docs/cni.md, "CNI server"). ADD allocates the pod's
 * IPs, plumbs its veth through netlink and creates its endpoint synchronously; DEL undoes it. At
 * start, once the endpoint cell's restore is done, it removes the host interfaces of ADDs the
 * previous agent did not finish (`<state-dir>/cni-attachments`), replays the DEL queue
 * (`--cni-delete-queue-dir`) and then becomes ready.
 * Needs: IPAMToken, EndpointAPIManagerToken, EndpointManagerToken, EndpointRestorerToken,
 * StateDirConfigToken and the api-server cell.
 */
export { CniServer } from './server.js';
export { CniServerConfigToken, cniServerConfigSchema, defaultDeleteQueueDir, type CniServerConfig } from './config.js';
export { NetlinkOps, type NetOps, type LinkOps } from './netops.js';
export { CniFailure, CelliumCniCode } from './errors.js';
export { hostIfName, HOST_IF_PREFIX } from './plumbing.js';
export { cniRouter, CNI_OPERATION_ID } from './routes.js';
export { AttachmentLedger, attachmentKey } from './ledger.js';
export { AttachmentJournal, JOURNAL_DIR, type AttachmentRecord, type JournalEntry } from './journal.js';
export { IpamRecords, IPAM_RECORDS_DIR, type IpamRecord } from './ipam-records.js';
export type { OrphanOutcome } from './orphans.js';
export type { GcOutcome } from './gc.js';
export { formatResult, parseResult, type CniResultModel } from './result.js';
export { parseCall, parseNetConf, parseArgs, type NetConf, type CniArgs, type ParsedCall } from './netconf.js';
export type { CniDeps } from './deps.js';
export * from './cell.js';
