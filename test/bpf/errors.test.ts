// Error mapping of the BPF layer (unprivileged): errno names, hints per syscall/errno, and the
// conversion of what the addon throws into BpfError.
import t from 'tap';
import { BpfError, bpfError, errnoName, hintFor, sys, toBpfError } from '../../src/bpf/errors.js';

t.test('errno names', async (t) => {
  t.equal(errnoName(1), 'EPERM');
  t.equal(errnoName(2), 'ENOENT');
  t.equal(errnoName(524), 'ENOTSUPP', 'the kernel-internal ENOTSUPP');
  t.equal(errnoName(9999), 'E9999');
});

t.test('hints', async (t) => {
  t.equal(hintFor('bpf_map_create', 'EPERM'), 'needs root or CAP_BPF');
  t.match(hintFor('bpf_tc_attach', 'EPERM'), /CAP_NET_ADMIN/);
  t.match(hintFor('mount', 'EPERM'), /CAP_SYS_ADMIN/);
  t.match(hintFor('bpf_obj_get', 'ENOENT', '/sys/fs/bpf/cellium/cellium_lxc'), /nothing pinned at \/sys\/fs\/bpf\/cellium\/cellium_lxc; is bpffs mounted\? mount -t bpf bpf \/sys\/fs\/bpf/);
  t.match(hintFor('bpf_obj_pin', 'EPERM', '/tmp/x'), /\/tmp\/x must be on a bpffs/);
  t.match(hintFor('bpf_obj_pin', 'EEXIST', '/sys/fs/bpf/a'), /already pinned/);
  t.match(hintFor('bpf_map_update_elem', 'EEXIST'), /BPF_NOEXIST/);
  t.match(hintFor('bpf_map_update_elem', 'E2BIG'), /full/);
  t.match(hintFor('bpf_object__load', 'EACCES'), /verifier/);
  t.match(hintFor('bpf_object__load', 'EINVAL'), /verifier/);
  t.match(hintFor('bpf_link_create', 'EINVAL'), /6\.6/);
  t.match(hintFor('bpf_link_create', 'ENODEV'), /no such interface/);
  t.match(hintFor('bpf_object__open_file', 'ENOENT'), /npm run build/);
  t.match(hintFor('bpf_link_update', 'ENOLINK'), /detached/);
  t.match(hintFor('bpf_map_create', 'ENOMEM'), /RLIMIT_MEMLOCK/);
  t.equal(hintFor('bpf_map_lookup_elem', 'EFAULT'), '');
});

t.test('bpfError and conversion', async (t) => {
  const e = bpfError('bpf_obj_get', 2, '/sys/fs/bpf/x');
  t.ok(e instanceof BpfError);
  t.match(e.message, /^bpf_obj_get: ENOENT \/sys\/fs\/bpf\/x: nothing pinned/);
  t.equal(e.code, 'ENOENT');
  t.equal(e.errno, 2);

  const raw = Object.assign(new Error('bpf_map_create: EPERM (Operation not permitted)'), { syscall: 'bpf_map_create', errno: 1, code: 'EPERM', path: '', detail: 'cellium_lxc' });
  const conv = toBpfError(raw) as BpfError;
  t.ok(conv instanceof BpfError);
  t.equal(conv.hint, 'needs root or CAP_BPF');
  t.equal(conv.detail, 'cellium_lxc');
  t.match(conv.message, /needs root or CAP_BPF\ncellium_lxc$/, 'the detail follows the message');
  t.equal(toBpfError(conv), conv, 'a BpfError passes through');
  const plain = new TypeError('key must be a Buffer');
  t.equal(toBpfError(plain), plain, 'errors without errno/syscall pass through');
  t.equal(toBpfError('x'), 'x');
  t.throws(() => sys(() => { throw raw; }), BpfError);
  t.equal(sys(() => 5), 5);
});
