/** What the CNI commands work with: IPAM, the endpoint managers, netlink, configuration, the ledger, the journal and the IPAM records. */
import type { Logger } from '../../hive/logger.js';
import type { EndpointAPIManager, EndpointManager } from '../endpoint/types.js';
import type { IPAM, IPAMMode } from '../ipam/types.js';
import type { CniServerConfig } from './config.js';
import type { AttachmentJournal } from './journal.js';
import type { IpamRecords } from './ipam-records.js';
import type { AttachmentLedger } from './ledger.js';
import type { NetOps } from './netops.js';

/** The dependencies of every CNI command. */
export interface CniDeps {
  readonly ipam: IPAM;
  readonly endpoints: EndpointAPIManager;
  readonly manager: EndpointManager;
  readonly net: NetOps;
  readonly cfg: Pick<CniServerConfig, 'cniMtu'> &
    Partial<Pick<CniServerConfig, 'enableIpv4BigTcp' | 'enableIpv6BigTcp' | 'bigTcpDevice'>> & {
      /** The agent's --ipam: cluster-pool (its own pool, the default) or delegated-plugin. */
      readonly ipamMode?: IPAMMode;
    };
  readonly ledger: AttachmentLedger;
  /** The host interfaces ADD created (survives restarts). */
  readonly journal: AttachmentJournal;
  /** The attachments whose addresses a delegated IPAM plugin may hold (survives restarts). */
  readonly ipamRecords: IpamRecords;
  readonly log: Logger;
}
