import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestedTags, tagFilter } from './routing-tags.ts';

test('requested tags: comma-separated, trimmed, empty ones dropped, repeated headers joined; none = no filter', () => {
  assert.equal(requestedTags(undefined), undefined);
  assert.equal(requestedTags(' , '), undefined);
  assert.deepEqual([...requestedTags(' eu, gdpr ,,eu')!], ['eu', 'gdpr']);
  assert.deepEqual([...requestedTags(['eu', 'us'])!], ['eu', 'us']);
});

test('tag filter: targets carrying a requested tag, else those tagged default, else none', () => {
  const targets = [{ name: 'us', tags: ['us'] }, { name: 'eu', tags: ['eu', 'gdpr'] }, { name: 'any', tags: ['default'] }, { name: 'bare', tags: [] }];
  const names = (tags: string) => targets.filter(tagFilter(targets, requestedTags(tags))!).map((t) => t.name);
  assert.deepEqual(names('gdpr'), ['eu']);
  assert.deepEqual(names('us,eu'), ['us', 'eu']);
  assert.deepEqual(names('apac'), ['any']);
  assert.equal(tagFilter(targets, undefined), undefined);
  const strict = targets.slice(0, 2);
  assert.deepEqual(strict.filter(tagFilter(strict, requestedTags('apac'))!), []);
});
