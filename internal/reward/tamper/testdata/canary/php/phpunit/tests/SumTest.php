<?php

use PHPUnit\Framework\TestCase;

require_once __DIR__ . '/../src/Sum.php';

class SumTest extends TestCase
{
    public function testAddsTwoSmallNumbers()
    {
        $got = sum(1, 2);
        $this->assertEquals(3, $got);
    }

    public function testAddsANumberToZero()
    {
        $this->assertEquals(5, sum(0, 5));
    }

    public function testReturnsAnInteger()
    {
        $this->assertEquals('integer', gettype(sum(2, 2)));
    }
}
