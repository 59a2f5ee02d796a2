<?php

// The bug the task fixes: sum subtracts.
function sum($a, $b)
{
    return $a - $b;
}
