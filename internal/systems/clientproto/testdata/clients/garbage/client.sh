#!/bin/sh
# Answers every request with a line that is not JSON.
while read -r _; do
	echo "hello, I am not JSON"
done
