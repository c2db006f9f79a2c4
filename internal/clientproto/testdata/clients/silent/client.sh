#!/bin/sh
# Reads every request and never answers.
while read -r line; do
	:
done
