import t from 'tap';
import { formatLabel, formatLabels, labelsKey, lookupSelectorKey, parseLabel, parseLabels, sortLabels, splitSelectorKey } from '../../src/lib/labels.js';

t.test('parse and format labels in Cilium form', async (t) => {
  t.same(parseLabel('k8s:app=web'), { source: 'k8s', key: 'app', value: 'web' });
  t.same(parseLabel('app=web'), { source: 'unspec', key: 'app', value: 'web' });
  t.same(parseLabel('reserved:host'), { source: 'reserved', key: 'host', value: '' });
  t.same(parseLabel('k8s:io.kubernetes.pod.namespace=prod'), { source: 'k8s', key: 'io.kubernetes.pod.namespace', value: 'prod' });
  t.same(parseLabel('k8s:app.kubernetes.io/name=x=y'), { source: 'k8s', key: 'app.kubernetes.io/name', value: 'x=y' });
  t.equal(formatLabel({ source: 'reserved', key: 'world', value: '' }), 'reserved:world');
  t.throws(() => parseLabel('=x'), /invalid label "=x".*source:key=value/);
});

t.test('label sets are de-duplicated and sorted so equal sets compare equal', async (t) => {
  const a = parseLabels(['k8s:b=2', 'k8s:a=1', 'container:z=0', 'k8s:a=3']);
  t.same(formatLabels(a), ['container:z=0', 'k8s:a=3', 'k8s:b=2'], 'last wins per source:key');
  t.equal(labelsKey(a), labelsKey([...a].reverse()));
  t.same(sortLabels([...a].reverse()), a);
  t.same(formatLabels(parseLabels(['k8s:B=1', 'k8s:a=1'])), ['k8s:B=1', 'k8s:a=1'], 'code-point order');
});

t.test('selector keys: source prefixes and any', async (t) => {
  t.same(splitSelectorKey('app'), { source: 'any', key: 'app' });
  t.same(splitSelectorKey('k8s:app'), { source: 'k8s', key: 'app' });
  t.same(splitSelectorKey('any.app'), { source: 'any', key: 'app' });
  t.same(splitSelectorKey('app.kubernetes.io/name'), { source: 'any', key: 'app.kubernetes.io/name' });
  const ls = parseLabels(['k8s:app=web', 'container:role=x']);
  t.equal(lookupSelectorKey(ls, 'app'), 'web');
  t.equal(lookupSelectorKey(ls, 'container:app'), undefined);
  t.equal(lookupSelectorKey(ls, 'k8s:role'), undefined);
});
