/**
 * Which webhook destinations are allowed (issue 4): by default no loopback, private,
 * link-local or otherwise internal address, so a user cannot make Vigil POST into the
 * operator's network. `VIGIL_WEBHOOK_ALLOW_PRIVATE=1` (set by `vigil start`, the local/dev
 * mode, and by the tests) allows them. Checked when a URL is set (literal addresses and
 * `localhost`) and again at connect time for every resolved address (DNS can change).
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

const internal = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  internal.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  internal.addSubnet(net, bits, 'ipv6');
}

/** True for loopback, private, link-local, CGNAT, multicast and unspecified addresses. */
export function isInternalAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return internal.check(ip, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return internal.check(mapped[1] as string, 'ipv4');
    return internal.check(ip, 'ipv6');
  }
  return false;
}

/** Whether the process allows internal webhook destinations (`VIGIL_WEBHOOK_ALLOW_PRIVATE=1`). */
export function allowPrivateFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.VIGIL_WEBHOOK_ALLOW_PRIVATE === '1' || env.VIGIL_WEBHOOK_ALLOW_PRIVATE === 'true';
}

/** Why `url` may not receive webhooks under the policy, or null. Only looks at the URL. */
export function internalDestinationProblem(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null; // syntax is judged elsewhere
  }
  if (host === 'localhost' || host.endsWith('.localhost') || isInternalAddress(host)) {
    return 'The webhook url points to a private or loopback address, which this server does not allow (the operator can set VIGIL_WEBHOOK_ALLOW_PRIVATE=1).';
  }
  return null;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net.connect that fails when a name resolves to an internal address, so a
 * public name that points inside cannot be used to reach the operator's network.
 */
export function publicOnlyLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true } as { all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => isInternalAddress(a.address));
    if (bad) {
      const e: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to the internal address ${bad.address}, which is not allowed`,
      );
      e.code = 'EINTERNALADDRESS';
      return callback(e, []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
}
