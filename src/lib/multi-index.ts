/** A Map of Sets used as an index (key -> the values filed under it): the one add and remove helper. */

/** Adds `v` to the set under `key`. */
export function addTo<K, V>(index: Map<K, Set<V>>, key: K, v: V): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(v);
}

/** Removes `v` from the set under `key`, dropping the set when it becomes empty. */
export function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, v: V): void {
  const set = index.get(key);
  set?.delete(v);
  if (set?.size === 0) index.delete(key);
}
