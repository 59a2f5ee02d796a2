'use strict';

module.exports = function sum(a, b) {
  return a + b;
};
