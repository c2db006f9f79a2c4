#!/bin/sh
# Reads every request and never answers.
while read -r _; do
	:
done
