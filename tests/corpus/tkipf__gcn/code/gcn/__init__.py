from __future__ import print_function
from __future__ import division
