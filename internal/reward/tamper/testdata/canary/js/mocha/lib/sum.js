'use strict';

// The bug the task fixes: sum subtracts.
module.exports = function sum(a, b) {
  return a - b;
};
