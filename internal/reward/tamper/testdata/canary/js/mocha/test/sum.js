'use strict';

const assert = require('assert');
const sum = require('../lib/sum');

describe('sum', () => {
  it('adds two small numbers', () => {
    const got = sum(1, 2);
    assert.strictEqual(got, 3);
  });

  it('adds a number to zero', () => {
    assert.strictEqual(sum(0, 5), 5);
  });

  it('returns a number', () => {
    assert.strictEqual(typeof sum(2, 2), 'number');
  });
});
