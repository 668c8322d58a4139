// b2compare: the behaviour scenarios of tools/box2d-compare/README.md, run in
// Box2D v3 with its default settings (60 Hz, 4 substeps, contact 30 Hz /
// damping ratio 10, push-out 3 m/s, joints soft at 60 Hz / ratio 2), and
// their figures printed as JSON on stdout. bitroom builds the same scenarios
// in shared/tests/fidelity/ and checks its figures against this output
// (committed as shared/tests/data/box2d_reference.json).
//
// Usage: b2compare > reference.json
// Every figure is defined in the README; keep this file and the Rust side in
// step when one changes.

#include "box2d/box2d.h"
#include "box2d/math_functions.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define DT ( 1.0f / 60.0f )
#define SUBSTEPS 4

static void Step( b2WorldId w )
{
	b2World_Step( w, DT, SUBSTEPS );
}

static b2WorldId NewWorld( bool sleep )
{
	b2WorldDef def = b2DefaultWorldDef();
	def.enableSleep = sleep;
	return b2CreateWorld( &def );
}

// A static box, top surface at y = 0, `halfWidth` each side.
static b2BodyId Ground( b2WorldId w, float halfWidth )
{
	b2BodyDef bd = b2DefaultBodyDef();
	bd.position = ( b2Vec2 ){ 0.0f, -1.0f };
	b2BodyId g = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Polygon box = b2MakeBox( halfWidth, 1.0f );
	b2CreatePolygonShape( g, &sd, &box );
	return g;
}

static b2BodyId DynamicBox( b2WorldId w, float x, float y, float hx, float hy, const b2ShapeDef* sd )
{
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ x, y };
	b2BodyId b = b2CreateBody( w, &bd );
	b2Polygon box = b2MakeBox( hx, hy );
	b2CreatePolygonShape( b, sd, &box );
	return b;
}

// A revolute joint's definition pinning `a` and `b` together at the world
// point `pivot`: each body's frame there, unturned, and nothing else set.
static b2RevoluteJointDef PinDef( b2BodyId a, b2BodyId b, b2Vec2 pivot )
{
	b2RevoluteJointDef jd = b2DefaultRevoluteJointDef();
	jd.base.bodyIdA = a;
	jd.base.bodyIdB = b;
	jd.base.localFrameA.p = b2Body_GetLocalPoint( a, pivot );
	jd.base.localFrameB.p = b2Body_GetLocalPoint( b, pivot );
	return jd;
}

static bool AllAsleep( const b2BodyId* bodies, int n )
{
	for ( int i = 0; i < n; ++i )
	{
		if ( b2Body_IsAwake( bodies[i] ) )
			return false;
	}
	return true;
}

static void PrintNumber( double v )
{
	if ( isnan( v ) )
		printf( "null" );
	else
		printf( "%.6g", v );
}

// ------------------------------------------------------------------ columns
// The largest |x| of any box over 10 s, the boxes created top-down: Box2D's
// own spread (its contacts are coloured in the order its broad phase finds
// them, which follows creation order).
static double ColumnDriftReversed( int count, float gap )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 20.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2BodyId* boxes = malloc( sizeof( b2BodyId ) * count );
	for ( int i = count - 1; i >= 0; --i )
		boxes[i] = DynamicBox( w, 0.0f, 0.5f + i * ( 1.0f + gap ), 0.5f, 0.5f, &sd );
	double drift = 0.0;
	for ( int s = 1; s <= 600; ++s )
	{
		Step( w );
		for ( int i = 0; i < count; ++i )
			drift = fmax( drift, fabs( b2Body_GetPosition( boxes[i] ).x ) );
	}
	free( boxes );
	b2DestroyWorld( w );
	return drift;
}

static void Column( int count, float gapMm, bool first )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 20.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	float gap = 0.001f * gapMm;
	b2BodyId* boxes = malloc( sizeof( b2BodyId ) * count );
	for ( int i = 0; i < count; ++i )
		boxes[i] = DynamicBox( w, 0.0f, 0.5f + i * ( 1.0f + gap ), 0.5f, 0.5f, &sd );
	double drift = 0.0, sideV10 = 0.0, sleep = NAN;
	int steps = 600;
	for ( int s = 1; s <= steps; ++s )
	{
		Step( w );
		for ( int i = 0; i < count; ++i )
			drift = fmax( drift, fabs( b2Body_GetPosition( boxes[i] ).x ) );
		if ( s == 10 )
		{
			for ( int i = 0; i < count; ++i )
				sideV10 += fabs( b2Body_GetLinearVelocity( boxes[i] ).x );
		}
		if ( isnan( sleep ) && AllAsleep( boxes, count ) )
			sleep = s * DT;
	}
	double topDrop = ( count - 0.5 ) - b2Body_GetPosition( boxes[count - 1] ).y;
	printf( "%s\n    {\"boxes\": %d, \"gap_mm\": %g, \"drift\": ", first ? "" : ",", count, gapMm );
	PrintNumber( drift );
	printf( ", \"drift_reversed\": " );
	PrintNumber( ColumnDriftReversed( count, gap ) );
	printf( ", \"side_v10\": " );
	PrintNumber( sideV10 );
	printf( ", \"top_drop\": " );
	PrintNumber( topDrop );
	printf( ", \"sleep_s\": " );
	PrintNumber( sleep );
	printf( "}" );
	free( boxes );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ pyramids
static void Pyramid( int rows, bool first )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 40.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	int n = rows * ( rows + 1 ) / 2;
	b2BodyId* boxes = malloc( sizeof( b2BodyId ) * n );
	int k = 0;
	float x0 = 0.5f * ( 1 - rows );
	for ( int i = 0; i < rows; ++i )
	{
		for ( int j = i; j < rows; ++j )
			boxes[k++] = DynamicBox( w, x0 + j - 0.5f * i, i + 0.5f, 0.5f, 0.5f, &sd );
	}
	b2BodyId top = boxes[n - 1];
	b2Vec2 p0 = b2Body_GetPosition( top );
	double drift = 0.0, sleep = NAN;
	int steps = 300;
	for ( int s = 1; s <= steps; ++s )
	{
		Step( w );
		drift = fmax( drift, fabs( b2Body_GetPosition( top ).x - p0.x ) );
		if ( isnan( sleep ) && AllAsleep( boxes, n ) )
			sleep = s * DT;
	}
	double drop = p0.y - b2Body_GetPosition( top ).y;
	printf( "%s\n    {\"rows\": %d, \"top_drift\": ", first ? "" : ",", rows );
	PrintNumber( drift );
	printf( ", \"top_drop\": " );
	PrintNumber( drop );
	printf( ", \"sleep_s\": " );
	PrintNumber( sleep );
	printf( "}" );
	free( boxes );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ ramp
// A static slab (half `halfLength` × 0.25) about the origin, turned up by
// `degrees`, of material `sd`; its rotation.
static b2Rot Slope( b2WorldId w, float degrees, float halfLength, const b2ShapeDef* sd )
{
	b2Rot q = b2MakeRot( degrees * B2_PI / 180.0f );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.rotation = q;
	b2BodyId slope = b2CreateBody( w, &bd );
	b2Polygon slab = b2MakeBox( halfLength, 0.25f );
	b2CreatePolygonShape( slope, sd, &slab );
	return q;
}

static void Ramp( float mu, bool first )
{
	b2WorldId w = NewWorld( true );
	b2ShapeDef sd = b2DefaultShapeDef();
	sd.material.friction = mu;
	b2Rot q = Slope( w, 20.0f, 10.0f, &sd );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.rotation = q;
	bd.type = b2_dynamicBody;
	bd.position = b2RotateVector( q, ( b2Vec2 ){ 6.0f, 0.75f } );
	b2BodyId box = b2CreateBody( w, &bd );
	b2Polygon cube = b2MakeBox( 0.5f, 0.5f );
	b2CreatePolygonShape( box, &sd, &cube );
	b2Vec2 p0 = b2Body_GetPosition( box );
	for ( int s = 1; s <= 120; ++s )
		Step( w );
	b2Vec2 d = b2Sub( b2Body_GetPosition( box ), p0 );
	double slid = -( d.x * q.c + d.y * q.s );
	printf( "%s\n    {\"friction\": %g, \"slid\": ", first ? "" : ",", mu );
	PrintNumber( slid );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ rolling
// A ball of radius 0.5 rolling on the ground at `speed` m/s (v and ω set to
// roll without slipping); 600 steps. Whether a slow roller keeps rolling or
// falls asleep: at 2 cm/s its farthest point moves at 4 cm/s, under the
// sleep threshold (5 cm/s); at 3 cm/s, 6 cm/s.
static void Rolling( float speed, bool first )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 20.0f );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 0.0f, 0.5f };
	bd.linearVelocity = ( b2Vec2 ){ speed, 0.0f };
	bd.angularVelocity = -speed / 0.5f;
	b2BodyId ball = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Circle c = { { 0.0f, 0.0f }, 0.5f };
	b2CreateCircleShape( ball, &sd, &c );
	double sleep = NAN;
	for ( int s = 1; s <= 600; ++s )
	{
		Step( w );
		if ( isnan( sleep ) && !b2Body_IsAwake( ball ) )
			sleep = s * DT;
	}
	printf( "%s\n    {\"speed\": %g, \"x_10s\": ", first ? "" : ",", speed );
	PrintNumber( b2Body_GetPosition( ball ).x );
	printf( ", \"sleep_s\": " );
	PrintNumber( sleep );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ spin
// The cap on angular speed: a quarter turn per step (B2_MAX_ROTATION · 1/dt),
// none with allowFastRotation. At `rate` Hz: a free disc (radius 0.5, no
// gravity) started at 100 rad/s, its angular velocity after 1 s; and a ball
// of radius 0.2 rolling from rest down a 30° ramp (friction 0.6) for 4 s,
// its speed and angular speed (rolling freely it passes 47 rad/s at 2.8 s).
static void Spin( int rate, bool fast, bool first )
{
	float dt = 1.0f / (float)rate;
	b2WorldDef wd = b2DefaultWorldDef();
	wd.gravity = ( b2Vec2 ){ 0.0f, 0.0f };
	b2WorldId w = b2CreateWorld( &wd );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.angularVelocity = 100.0f;
	bd.allowFastRotation = fast;
	b2BodyId disc = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Circle c = { { 0.0f, 0.0f }, 0.5f };
	b2CreateCircleShape( disc, &sd, &c );
	for ( int s = 0; s < rate; ++s )
		b2World_Step( w, dt, SUBSTEPS );
	double wFree = b2Body_GetAngularVelocity( disc );
	b2DestroyWorld( w );

	w = NewWorld( false );
	sd.material.friction = 0.6f;
	b2Rot q = Slope( w, 30.0f, 20.0f, &sd );
	bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.allowFastRotation = fast;
	bd.position = b2RotateVector( q, ( b2Vec2 ){ 17.0f, 0.45f } );
	b2BodyId ball = b2CreateBody( w, &bd );
	b2Circle small = { { 0.0f, 0.0f }, 0.2f };
	b2CreateCircleShape( ball, &sd, &small );
	for ( int s = 0; s < 4 * rate; ++s )
		b2World_Step( w, dt, SUBSTEPS );
	b2Vec2 v = b2Body_GetLinearVelocity( ball );
	printf( "%s\n    {\"rate\": %d, \"fast\": %s, \"w_free\": ", first ? "" : ",", rate, fast ? "true" : "false" );
	PrintNumber( wFree );
	printf( ", \"v_4s\": " );
	PrintNumber( -( v.x * q.c + v.y * q.s ) );
	printf( ", \"w_4s\": " );
	PrintNumber( b2Body_GetAngularVelocity( ball ) );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ joints
// Weld, prismatic, revolute and distance joints with their limits, motors
// and springs (sleep off). Each case prints the coordinate it moves at 1, 2
// and 3 s and its lowest value from the start: a cantilever's tip height;
// an elevator's height; a flipper's angle (unwrapped); a rope's length.
// `first` as in the other lists.
//
// RunJointCase steps `w` 3 s, reading the coordinate of `body` after each
// step with `read` (`state` is its own), prints the case and destroys `w`.
typedef double ( *ReadCoordinate )( b2BodyId body, void* state );

static void RunJointCase( b2WorldId w, const char* name, double start, ReadCoordinate read, b2BodyId body,
						  void* state, bool first )
{
	double at[3], low = start;
	for ( int s = 1; s <= 180; ++s )
	{
		Step( w );
		double x = read( body, state );
		low = x < low ? x : low;
		if ( s % 60 == 0 )
			at[s / 60 - 1] = x;
	}
	b2DestroyWorld( w );
	printf( "%s\n    {\"name\": \"%s\", \"at_1s\": ", first ? "" : ",", name );
	PrintNumber( at[0] );
	printf( ", \"at_2s\": " );
	PrintNumber( at[1] );
	printf( ", \"at_3s\": " );
	PrintNumber( at[2] );
	printf( ", \"low\": " );
	PrintNumber( low );
	printf( "}" );
}

static double TipHeight( b2BodyId link, void* state )
{
	(void)state;
	return b2Body_GetWorldPoint( link, ( b2Vec2 ){ 0.5f, 0.0f } ).y;
}

static double Height( b2BodyId body, void* state )
{
	(void)state;
	return b2Body_GetPosition( body ).y;
}

static double RopeLength( b2BodyId ball, void* state )
{
	(void)state;
	return b2Length( b2Sub( b2Body_GetPosition( ball ), ( b2Vec2 ){ 0.0f, 10.0f } ) );
}

// The angle unwrapped: `state` holds the angle so far and the last read.
static double UnwrappedAngle( b2BodyId body, void* state )
{
	double* angle = state;
	double a = b2Rot_GetAngle( b2Body_GetRotation( body ) );
	double d = a - angle[1];
	d = d > B2_PI ? d - 2.0 * B2_PI : ( d < -B2_PI ? d + 2.0 * B2_PI : d );
	angle[0] += d;
	angle[1] = a;
	return angle[0];
}

// Eight capsules (half length 0.5, radius 0.125) welded end to end out from
// a static body at the origin, rigid welds or soft ones (15 Hz, 5 Hz,
// damping 0.5): the tip of the last.
static void Cantilever( bool soft, bool first )
{
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId prev = b2CreateBody( w, &bd );
	float hx = 0.5f;
	b2Capsule cap = { { -hx, 0.0f }, { hx, 0.0f }, 0.125f };
	b2ShapeDef sd = b2DefaultShapeDef();
	for ( int i = 0; i < 8; ++i )
	{
		bd = b2DefaultBodyDef();
		bd.type = b2_dynamicBody;
		bd.position = ( b2Vec2 ){ ( 1.0f + 2.0f * i ) * hx, 0.0f };
		b2BodyId b = b2CreateBody( w, &bd );
		b2CreateCapsuleShape( b, &sd, &cap );
		b2Vec2 pivot = { 2.0f * i * hx, 0.0f };
		b2WeldJointDef jd = b2DefaultWeldJointDef();
		jd.base.bodyIdA = prev;
		jd.base.bodyIdB = b;
		jd.base.localFrameA.p = b2Body_GetLocalPoint( prev, pivot );
		jd.base.localFrameB.p = b2Body_GetLocalPoint( b, pivot );
		jd.linearHertz = soft ? 15.0f : 0.0f;
		jd.angularHertz = soft ? 5.0f : 0.0f;
		jd.linearDampingRatio = 0.5f;
		jd.angularDampingRatio = 0.5f;
		b2CreateWeldJoint( w, &jd );
		prev = b;
	}
	RunJointCase( w, soft ? "cantilever soft" : "cantilever rigid", 0.0, TipHeight, prev, NULL, first );
}

// A unit box on a vertical prismatic joint at height 1, limits −0.5 and 3:
// a motor at 2 m/s with 50 N (it rises to the upper limit), one with 5 N
// (it rests on the lower), or a spring (2 Hz, damping 0.1) toward 1.
static void Elevator( int mode )
{
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &bd );
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 0.0f, 1.0f };
	b2BodyId box = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Polygon p = b2MakeBox( 0.5f, 0.5f );
	b2CreatePolygonShape( box, &sd, &p );
	b2PrismaticJointDef jd = b2DefaultPrismaticJointDef();
	jd.base.bodyIdA = ground;
	jd.base.bodyIdB = box;
	jd.base.localFrameA.p = ( b2Vec2 ){ 0.0f, 1.0f };
	jd.base.localFrameA.q = b2MakeRot( 0.5f * B2_PI );
	jd.base.localFrameB.q = b2MakeRot( 0.5f * B2_PI );
	jd.enableLimit = true;
	jd.lowerTranslation = -0.5f;
	jd.upperTranslation = 3.0f;
	const char* names[3] = { "elevator motor", "elevator weak motor", "elevator spring" };
	if ( mode < 2 )
	{
		jd.enableMotor = true;
		jd.motorSpeed = 2.0f;
		jd.maxMotorForce = mode == 0 ? 50.0f : 5.0f;
	}
	else
	{
		jd.enableSpring = true;
		jd.hertz = 2.0f;
		jd.dampingRatio = 0.1f;
		jd.targetTranslation = 1.0f;
	}
	b2CreatePrismaticJoint( w, &jd );
	RunJointCase( w, names[mode], 1.0, Height, box, NULL, false );
}

// A ball (radius 0.25) on a distance joint of length 2 from (0, 10),
// released at (1.2, 8.4): a spring (2 Hz, damping 0.1); a softer spring
// (0.5 Hz) held by limits of 1.5 and 2.5 m; or no spring force (0 Hz)
// with limits of 1 and 3 m and a motor winding it in at 1 m/s with 50 N.
static void Rope( int mode )
{
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &bd );
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 1.2f, 8.4f };
	b2BodyId ball = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Circle c = { { 0.0f, 0.0f }, 0.25f };
	b2CreateCircleShape( ball, &sd, &c );
	b2DistanceJointDef jd = b2DefaultDistanceJointDef();
	jd.base.bodyIdA = ground;
	jd.base.bodyIdB = ball;
	jd.base.localFrameA.p = ( b2Vec2 ){ 0.0f, 10.0f };
	jd.length = 2.0f;
	jd.enableSpring = true;
	const char* names[3] = { "rope spring", "rope limits", "rope winch" };
	if ( mode == 0 )
	{
		jd.hertz = 2.0f;
		jd.dampingRatio = 0.1f;
	}
	else if ( mode == 1 )
	{
		jd.hertz = 0.5f;
		jd.dampingRatio = 0.1f;
		jd.enableLimit = true;
		jd.minLength = 1.5f;
		jd.maxLength = 2.5f;
	}
	else
	{
		jd.hertz = 0.0f;
		jd.enableLimit = true;
		jd.minLength = 1.0f;
		jd.maxLength = 3.0f;
		jd.enableMotor = true;
		jd.motorSpeed = -1.0f;
		jd.maxMotorForce = 50.0f;
	}
	b2CreateDistanceJoint( w, &jd );
	RunJointCase( w, names[mode], 2.0, RopeLength, ball, NULL, false );
}

// A 2 m plank pinned at its end at the origin (revolute joint): a motor at
// 10 rad/s with 100 N·m against limits of ±0.5 rad, a spring (1 Hz,
// undamped) toward 0.5 rad, or a motor at 3 rad/s with 5 N·m (it swings
// over the top).
static void Flipper( int mode )
{
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &bd );
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 1.0f, 0.0f };
	b2BodyId plank = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Polygon p = b2MakeBox( 1.0f, 0.1f );
	b2CreatePolygonShape( plank, &sd, &p );
	b2RevoluteJointDef jd = PinDef( ground, plank, ( b2Vec2 ){ 0.0f, 0.0f } );
	const char* names[3] = { "flipper limit", "flipper spring", "flipper motor" };
	if ( mode == 0 )
	{
		jd.enableMotor = true;
		jd.motorSpeed = 10.0f;
		jd.maxMotorTorque = 100.0f;
		jd.enableLimit = true;
		jd.lowerAngle = -0.5f;
		jd.upperAngle = 0.5f;
	}
	else if ( mode == 1 )
	{
		jd.enableSpring = true;
		jd.hertz = 1.0f;
		jd.dampingRatio = 0.0f;
		jd.targetAngle = 0.5f;
	}
	else
	{
		jd.enableMotor = true;
		jd.motorSpeed = 3.0f;
		jd.maxMotorTorque = 5.0f;
	}
	b2CreateRevoluteJoint( w, &jd );
	double angle[2] = { 0.0, 0.0 };
	RunJointCase( w, names[mode], 0.0, UnwrappedAngle, plank, angle, false );
}

// ------------------------------------------------------------------ rates
// Other tick rates (4 substeps): at `rate` Hz, a pyramid of 20 rows of unit
// boxes for 6 s (its top box's motion, when all sleep) and a ball of radius
// 0.5 with restitution 0.5 dropped from 5 m (the heights of its first
// three bounces, sleep off).
static void Rate( int rate, bool first )
{
	float dt = 1.0f / (float)rate;
	b2WorldId w = NewWorld( true );
	Ground( w, 40.0f );
	enum
	{
		ROWS = 20
	};
	b2BodyId boxes[ROWS * ( ROWS + 1 ) / 2];
	int n = 0;
	b2ShapeDef sd = b2DefaultShapeDef();
	for ( int r = 0; r < ROWS; ++r )
		for ( int i = 0; i < ROWS - r; ++i )
			boxes[n++] = DynamicBox( w, -0.5f * ( ROWS - r - 1 ) + i, 0.5f + r, 0.5f, 0.5f, &sd );
	b2Vec2 top0 = b2Body_GetPosition( boxes[n - 1] );
	double sleep = NAN;
	for ( int s = 1; s <= 6 * rate; ++s )
	{
		b2World_Step( w, dt, SUBSTEPS );
		if ( isnan( sleep ) && AllAsleep( boxes, n ) )
			sleep = (double)s / rate;
	}
	b2Vec2 top = b2Body_GetPosition( boxes[n - 1] );
	b2DestroyWorld( w );

	w = NewWorld( false );
	Ground( w, 20.0f );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 0.0f, 5.5f };
	b2BodyId ball = b2CreateBody( w, &bd );
	sd.material.restitution = 0.5f;
	b2Circle c = { { 0.0f, 0.0f }, 0.5f };
	b2CreateCircleShape( ball, &sd, &c );
	double vyPrev = 0.0, peak = 0.0, peaks[3] = { NAN, NAN, NAN };
	int bounces = 0;
	for ( int s = 1; s <= 6 * rate; ++s )
	{
		b2World_Step( w, dt, SUBSTEPS );
		double y = b2Body_GetPosition( ball ).y, vy = b2Body_GetLinearVelocity( ball ).y;
		if ( vyPrev > 0.0 && vy <= 0.0 && bounces < 3 )
			peaks[bounces++] = peak;
		if ( vy > 0.0 )
			peak = y;
		vyPrev = vy;
	}
	b2DestroyWorld( w );
	printf( "%s\n    {\"rate\": %d, \"top_dx\": ", first ? "" : ",", rate );
	PrintNumber( top.x - top0.x );
	printf( ", \"top_dy\": " );
	PrintNumber( top.y - top0.y );
	printf( ", \"sleep_s\": " );
	PrintNumber( sleep );
	for ( int k = 0; k < 3; ++k )
	{
		printf( ", \"peak_%d\": ", k + 1 );
		PrintNumber( peaks[k] );
	}
	printf( "}" );
}

// ------------------------------------------------------------------ pendulum
// A 2 m pendulum released at 10°, on a revolute joint (distance = false) or a
// rigid distance joint; 60 s, sleep off.
static void Pendulum( bool distance )
{
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &bd );
	float a0 = 10.0f * B2_PI / 180.0f;
	b2Vec2 pivot = { 0.0f, 10.0f };
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 2.0f * sinf( a0 ), 10.0f - 2.0f * cosf( a0 ) };
	b2BodyId bob = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Circle circle = { { 0.0f, 0.0f }, 0.1f };
	b2CreateCircleShape( bob, &sd, &circle );
	if ( distance )
	{
		b2DistanceJointDef jd = b2DefaultDistanceJointDef();
		jd.base.bodyIdA = ground;
		jd.base.bodyIdB = bob;
		jd.base.localFrameA.p = pivot;
		jd.length = 2.0f;
		b2CreateDistanceJoint( w, &jd );
	}
	else
	{
		b2RevoluteJointDef jd = PinDef( ground, bob, pivot );
		b2CreateRevoluteJoint( w, &jd );
	}
	double prev2 = 0.0, prev = a0, first = NAN, last = NAN;
	double firstT = 0.0, lastT = 0.0;
	int peaks = 0;
	for ( int s = 1; s <= 3600; ++s )
	{
		Step( w );
		b2Vec2 p = b2Body_GetPosition( bob );
		double a = atan2( p.x - pivot.x, pivot.y - p.y );
		// A peak of the angle at the previous step.
		if ( s >= 2 && prev > prev2 && prev >= a && prev > 0.0 )
		{
			if ( peaks == 0 )
			{
				first = prev;
				firstT = ( s - 1 ) * DT;
			}
			last = prev;
			lastT = ( s - 1 ) * DT;
			peaks += 1;
		}
		prev2 = prev;
		prev = a;
	}
	double ratio = last / first;
	double loss = 100.0 * ( 1.0 - pow( ratio, 1.0 / ( peaks - 1 ) ) );
	printf( "{\"joint\": \"%s\", \"amplitude_ratio\": ", distance ? "distance" : "revolute" );
	PrintNumber( ratio );
	printf( ", \"loss_per_period_pct\": " );
	PrintNumber( loss );
	printf( ", \"period_s\": " );
	PrintNumber( ( lastT - firstT ) / ( peaks - 1 ) );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ chain
static double Energy( const b2BodyId* bodies, int n )
{
	double e = 0.0;
	for ( int i = 0; i < n; ++i )
	{
		double m = b2Body_GetMass( bodies[i] );
		double inertia = b2Body_GetRotationalInertia( bodies[i] );
		b2Vec2 c = b2Body_GetWorldCenter( bodies[i] );
		b2Vec2 v = b2Body_GetLinearVelocity( bodies[i] );
		double om = b2Body_GetAngularVelocity( bodies[i] );
		e += m * 10.0 * c.y + 0.5 * m * ( (double)v.x * v.x + (double)v.y * v.y ) + 0.5 * inertia * om * om;
	}
	return e;
}

static void Chain( void )
{
	enum
	{
		LINKS = 10
	};
	b2WorldId w = NewWorld( false );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId prevBody = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	sd.filter.groupIndex = -1;
	b2Capsule link = { { -0.5f, 0.0f }, { 0.5f, 0.0f }, 0.05f };
	b2BodyId links[LINKS];
	double mass = 0.0;
	for ( int i = 0; i < LINKS; ++i )
	{
		bd.type = b2_dynamicBody;
		bd.position = ( b2Vec2 ){ 0.5f + i, 20.0f };
		links[i] = b2CreateBody( w, &bd );
		b2CreateCapsuleShape( links[i], &sd, &link );
		mass += b2Body_GetMass( links[i] );
		b2Vec2 pivot = { (float)i, 20.0f };
		b2RevoluteJointDef jd = PinDef( prevBody, links[i], pivot );
		b2CreateRevoluteJoint( w, &jd );
		prevBody = links[i];
	}
	double scale = mass * 10.0 * LINKS;
	double e0 = Energy( links, LINKS ), gain = 0.0, loss10 = NAN;
	for ( int s = 1; s <= 3600; ++s )
	{
		Step( w );
		double e = Energy( links, LINKS );
		gain = fmax( gain, ( e - e0 ) / scale );
		if ( s == 600 )
			loss10 = ( e0 - e ) / scale;
	}
	printf( "{\"energy_loss_10s\": " );
	PrintNumber( loss10 );
	printf( ", \"energy_loss_60s\": " );
	PrintNumber( ( e0 - Energy( links, LINKS ) ) / scale );
	printf( ", \"max_gain\": " );
	PrintNumber( gain );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ bounce
enum
{
	DROPS = 40
};

static void Bounce( float restitution, bool first )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 30.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	sd.material.restitution = restitution;
	b2Circle ball = { { 0.0f, 0.0f }, 0.25f };
	b2BodyId balls[DROPS];
	double height[DROPS], pen[DROPS], apex[DROPS][3], prevVy[DROPS];
	int phase[DROPS], apexes[DROPS];
	for ( int i = 0; i < DROPS; ++i )
	{
		height[i] = 0.25 * ( i + 1 );
		b2BodyDef bd = b2DefaultBodyDef();
		bd.type = b2_dynamicBody;
		bd.position = ( b2Vec2 ){ -19.5f + i, 0.25f * ( i + 1 ) + 0.25f };
		balls[i] = b2CreateBody( w, &bd );
		b2CreateCircleShape( balls[i], &sd, &ball );
		pen[i] = 0.0;
		phase[i] = 0;
		apexes[i] = 0;
		prevVy[i] = 0.0;
	}
	for ( int s = 1; s <= 480; ++s )
	{
		Step( w );
		for ( int i = 0; i < DROPS; ++i )
		{
			double bottom = b2Body_GetPosition( balls[i] ).y - 0.25;
			double vy = b2Body_GetLinearVelocity( balls[i] ).y;
			if ( phase[i] == 0 )
			{
				// Falling to the first contact: until the ball stops moving down.
				pen[i] = fmax( pen[i], -bottom );
				if ( s > 1 && vy >= 0.0 )
					phase[i] = 1;
			}
			else if ( prevVy[i] > 0.0 && vy <= 0.0 && apexes[i] < 3 && bottom > 0.001 )
			{
				apex[i][apexes[i]] = bottom;
				apexes[i] += 1;
			}
			prevVy[i] = vy;
		}
	}
	printf( "%s\n    {\"restitution\": %g, \"drops\": [", first ? "" : ",", restitution );
	for ( int i = 0; i < DROPS; ++i )
	{
		printf( "%s\n      {\"height\": %g, \"penetration\": ", i == 0 ? "" : ",", height[i] );
		PrintNumber( pen[i] );
		printf( ", \"ratios\": [" );
		for ( int k = 0; k < apexes[i]; ++k )
		{
			double base = k == 0 ? height[i] : apex[i][k - 1];
			printf( "%s", k == 0 ? "" : ", " );
			PrintNumber( apex[i][k] / base );
		}
		printf( "]}" );
	}
	printf( "]}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ ragdolls
// The benchmark human of benchmark-scenes.md section 7 (as b2bench.c builds it).
typedef struct BoneSpec
{
	float bodyY, c1, c2, radius, linearDamping;
	int parent;
	float pivotY, lower, upper, frictionScale;
	int foot, lowerArm;
} BoneSpec;

static const BoneSpec g_bones[11] = {
	{ 0.95f, -0.02f, 0.02f, 0.095f, 0.0f, -1, 0.0f, 0.0f, 0.0f, 1.0f, 0, 0 },
	{ 1.2f, -0.135f, 0.135f, 0.09f, 0.0f, 0, 1.0f, -0.25f, 0.0f, 0.5f, 0, 0 },
	{ 1.475f, -0.038f, 0.039f, 0.075f, 0.1f, 1, 1.4f, -0.3f, 0.1f, 0.25f, 0, 0 },
	{ 0.775f, -0.125f, 0.125f, 0.06f, 0.0f, 0, 0.9f, -0.05f, 0.4f, 1.0f, 0, 0 },
	{ 0.475f, -0.155f, 0.125f, 0.045f, 0.0f, 3, 0.625f, -0.5f, -0.02f, 0.5f, 1, 0 },
	{ 0.775f, -0.125f, 0.125f, 0.06f, 0.0f, 0, 0.9f, -0.05f, 0.4f, 1.0f, 0, 0 },
	{ 0.475f, -0.155f, 0.125f, 0.045f, 0.0f, 5, 0.625f, -0.5f, -0.02f, 0.5f, 1, 0 },
	{ 1.225f, -0.125f, 0.125f, 0.035f, 0.0f, 1, 1.35f, -0.1f, 0.8f, 0.5f, 0, 0 },
	{ 0.975f, -0.125f, 0.125f, 0.03f, 0.1f, 7, 1.1f, -0.2f, 0.3f, 0.1f, 0, 1 },
	{ 1.225f, -0.125f, 0.125f, 0.035f, 0.0f, 1, 1.35f, -0.1f, 0.8f, 0.5f, 0, 0 },
	{ 0.975f, -0.125f, 0.125f, 0.03f, 0.1f, 9, 1.1f, -0.2f, 0.3f, 0.1f, 0, 1 },
};

static void Human( b2WorldId w, b2Vec2 at, int group, b2BodyId* bodies, b2JointId* joints )
{
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.sleepThreshold = 0.1f;
	b2ShapeDef sd = b2DefaultShapeDef();
	sd.material.friction = 0.2f;
	sd.filter.groupIndex = -group;
	sd.filter.categoryBits = 2;
	sd.filter.maskBits = 1 | 2;
	b2ShapeDef foot = sd;
	foot.material.friction = 0.05f;
	foot.filter.maskBits = 1;
	b2Vec2 points[4] = { { -0.03f, -0.185f }, { 0.11f, -0.185f }, { 0.11f, -0.16f }, { -0.03f, -0.14f } };
	b2Hull hull = b2ComputeHull( points, 4 );
	b2Polygon footPolygon = b2MakePolygon( &hull, 0.015f );
	for ( int i = 0; i < 11; ++i )
	{
		const BoneSpec* b = g_bones + i;
		bd.position = b2Add( ( b2Vec2 ){ 0.0f, b->bodyY }, at );
		bd.linearDamping = b->linearDamping;
		bodies[i] = b2CreateBody( w, &bd );
		b2Capsule capsule = { { 0.0f, b->c1 }, { 0.0f, b->c2 }, b->radius };
		b2CreateCapsuleShape( bodies[i], &sd, &capsule );
		if ( b->foot )
			b2CreatePolygonShape( bodies[i], &foot, &footPolygon );
		joints[i] = b2_nullJointId;
		if ( b->parent < 0 )
			continue;
		b2Vec2 pivot = b2Add( ( b2Vec2 ){ 0.0f, b->pivotY }, at );
		b2RevoluteJointDef jd = PinDef( bodies[b->parent], bodies[i], pivot );
		if ( b->lowerArm )
			jd.base.localFrameA.q = b2MakeRot( 0.25f * B2_PI );
		jd.enableLimit = true;
		jd.lowerAngle = b->lower * B2_PI;
		jd.upperAngle = b->upper * B2_PI;
		jd.enableMotor = true;
		jd.motorSpeed = 0.0f;
		jd.maxMotorTorque = b->frictionScale * 0.05f;
		jd.enableSpring = true;
		jd.hertz = 5.0f;
		jd.dampingRatio = 0.5f;
		joints[i] = b2CreateRevoluteJoint( w, &jd );
	}
}

static double JointGap( b2JointId j )
{
	b2BodyId a = b2Joint_GetBodyA( j ), b = b2Joint_GetBodyB( j );
	b2Vec2 pa = b2Body_GetWorldPoint( a, b2Joint_GetLocalFrameA( j ).p );
	b2Vec2 pb = b2Body_GetWorldPoint( b, b2Joint_GetLocalFrameB( j ).p );
	return b2Distance( pa, pb );
}

typedef struct PileFigures
{
	double mean, top, minY, gap, sleep;
} PileFigures;

// Steps a world of `humans` ragdolls (bodies and joints 11 a human, the
// root's joint null) for 600 steps and destroys it: the figures of one pile.
static PileFigures RunRagdolls( b2WorldId w, const b2BodyId* bodies, const b2JointId* joints, int humans )
{
	int bones = 11 * humans;
	double minY = 1e9, gap = 0.0, sleep = NAN;
	for ( int s = 1; s <= 600; ++s )
	{
		Step( w );
		for ( int i = 0; i < bones; ++i )
		{
			minY = fmin( minY, b2Body_GetPosition( bodies[i] ).y );
			if ( B2_IS_NON_NULL( joints[i] ) )
				gap = fmax( gap, JointGap( joints[i] ) );
		}
		if ( isnan( sleep ) && AllAsleep( bodies, bones ) )
			sleep = s * DT;
	}
	double mean = 0.0, top = -1e9;
	for ( int i = 0; i < bones; ++i )
	{
		double y = b2Body_GetPosition( bodies[i] ).y;
		mean += y / bones;
		top = fmax( top, y );
	}
	b2DestroyWorld( w );
	return ( PileFigures ){ mean, top, minY, gap, sleep };
}

// One pile, every human `dx` metres to the right of its place.
static PileFigures RagdollPile( float dx )
{
	enum
	{
		HUMANS = 20,
		BONES = HUMANS * 11
	};
	b2WorldId w = NewWorld( true );
	b2BodyId ground = Ground( w, 20.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	for ( int side = -1; side <= 1; side += 2 )
	{
		b2Polygon wall = b2MakeOffsetBox( 0.5f, 5.0f, ( b2Vec2 ){ 3.5f * side, 6.0f }, b2Rot_identity );
		b2CreatePolygonShape( ground, &sd, &wall );
	}
	b2BodyId bodies[BONES];
	b2JointId joints[BONES];
	for ( int i = 0; i < HUMANS; ++i )
	{
		b2Vec2 at = { -1.8f + dx + 1.2f * ( i % 4 ), 2.0f * ( i / 4 ) };
		Human( w, at, i + 1, bodies + 11 * i, joints + 11 * i );
	}
	return RunRagdolls( w, bodies, joints, HUMANS );
}

static int CompareDoubles( const void* a, const void* b )
{
	double x = *(const double*)a, y = *(const double*)b;
	return ( x > y ) - ( x < y );
}

// The pile as placed, then RAGDOLL_PILES − 1 more shifted by 1, 2, … mm:
// when a pile sleeps is chaotic (a limb slipping late keeps the whole
// island awake), so the median and the latest of the piles are compared
// too. A pile that never sleeps counts as 10 s.
enum
{
	RAGDOLL_PILES = 7
};

// Prints the figures of `count` piles (the first one's own; over all, the
// lowest bone, the widest joint gap, the median and latest sleep; each
// one's sleep). `p` is sorted no further.
static void PrintPiles( const PileFigures* p, int count )
{
	double sleeps[16];
	if ( count > 16 )
	{
		fprintf( stderr, "PrintPiles: at most 16 piles\n" );
		exit( 1 );
	}
	double minY = 1e9, gap = 0.0;
	for ( int k = 0; k < count; ++k )
	{
		sleeps[k] = isnan( p[k].sleep ) ? 10.0 : p[k].sleep;
		minY = fmin( minY, p[k].minY );
		gap = fmax( gap, p[k].gap );
	}
	qsort( sleeps, count, sizeof( double ), CompareDoubles );
	printf( "{\"mean_height\": " );
	PrintNumber( p[0].mean );
	printf( ", \"top_height\": " );
	PrintNumber( p[0].top );
	printf( ", \"min_y\": " );
	PrintNumber( p[0].minY );
	printf( ", \"max_joint_gap\": " );
	PrintNumber( p[0].gap );
	printf( ", \"min_y_all\": " );
	PrintNumber( minY );
	printf( ", \"max_joint_gap_all\": " );
	PrintNumber( gap );
	printf( ", \"sleep_s\": " );
	PrintNumber( p[0].sleep );
	printf( ", \"sleep_s_median\": " );
	PrintNumber( sleeps[count / 2] );
	printf( ", \"sleep_s_latest\": " );
	PrintNumber( sleeps[count - 1] );
	printf( ", \"sleeps\": [" );
	for ( int k = 0; k < count; ++k )
	{
		printf( k ? ", " : "" );
		PrintNumber( p[k].sleep );
	}
	printf( "]}" );
}

static void Ragdolls( void )
{
	PileFigures p[RAGDOLL_PILES];
	for ( int k = 0; k < RAGDOLL_PILES; ++k )
		p[k] = RagdollPile( 0.001f * k );
	PrintPiles( p, RAGDOLL_PILES );
}

// ------------------------------------------------------------ ragdoll heaps
// Twelve humans dropped on open ground almost on top of each other (human i
// at x = spacing · i, y = 1.2 i), so that limbs land across other ragdolls'
// joints; seven heaps, spacing 10, 10.5, …, 13 cm (shifting a whole heap
// would change nothing in bitroom, on flat ground in fixed point). A limb
// caught in a knee is where solving the joints before the contacts kept
// bitroom's heaps awake for good.
enum
{
	HEAP_HUMANS = 12,
	RAGDOLL_HEAPS = 7
};

// A world of `n` humans dropped on open ground, human i at (spacing·i,
// dy·i); their bones and joints (11 a human) into `bodies` and `joints`.
static b2WorldId HeapWorld( int n, float spacing, float dy, b2BodyId* bodies, b2JointId* joints )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 20.0f );
	for ( int i = 0; i < n; ++i )
	{
		b2Vec2 at = { spacing * i, dy * i };
		Human( w, at, i + 1, bodies + 11 * i, joints + 11 * i );
	}
	return w;
}

static PileFigures RagdollHeap( float spacing )
{
	b2BodyId bodies[11 * HEAP_HUMANS];
	b2JointId joints[11 * HEAP_HUMANS];
	b2WorldId w = HeapWorld( HEAP_HUMANS, spacing, 1.2f, bodies, joints );
	return RunRagdolls( w, bodies, joints, HEAP_HUMANS );
}

static void RagdollHeaps( void )
{
	PileFigures p[RAGDOLL_HEAPS];
	for ( int k = 0; k < RAGDOLL_HEAPS; ++k )
		p[k] = RagdollHeap( 0.1f + 0.005f * k );
	PrintPiles( p, RAGDOLL_HEAPS );
}

// ---------------------------------------------------------------- heap tail
// When do heaps of ragdolls sleep, over many of them: 960 heaps of n humans,
// human i at (s·i, dy·i), (n, dy) = (16, 1), (20, 0.8), (10, 1.5), (14, 1.1),
// s = 3 cm + o + 1.37 k cm (k < 60, o = 0, 0.31, 0.57, 0.83 cm), each
// stepped until it sleeps or for 20 s. One heap's time is chaos; the median,
// the 90th percentile and how many never sleep or sleep after 8 s are the
// figures (a heap that never sleeps counts as 20 s). Long (about 40 s for
// Box2D or bitroom's release build): bitroom's example runs it only when
// named (`--only heap_tail`).
enum
{
	TAIL_HEAPS = 960
};

static double TailHeap( int n, float spacing, float dy )
{
	b2BodyId bodies[11 * 20];
	b2JointId joints[11 * 20];
	b2WorldId w = HeapWorld( n, spacing, dy, bodies, joints );
	double sleep = NAN;
	for ( int s = 1; s <= 1200 && isnan( sleep ); ++s )
	{
		Step( w );
		if ( AllAsleep( bodies, 11 * n ) )
			sleep = s * DT;
	}
	b2DestroyWorld( w );
	return sleep;
}

static void HeapTail( void )
{
	const int ns[4] = { 16, 20, 10, 14 };
	const float dys[4] = { 1.0f, 0.8f, 1.5f, 1.1f };
	const float offsets[4] = { 0.0f, 0.0031f, 0.0057f, 0.0083f };
	static double sleeps[TAIL_HEAPS];
	int count = 0, never = 0, late = 0;
	for ( int o = 0; o < 4; ++o )
		for ( int g = 0; g < 4; ++g )
			for ( int k = 0; k < 60; ++k )
			{
				double t = TailHeap( ns[g], 0.03f + offsets[o] + 0.0137f * k, dys[g] );
				never += isnan( t );
				late += !isnan( t ) && t > 8.0;
				sleeps[count++] = isnan( t ) ? 20.0 : t;
			}
	qsort( sleeps, count, sizeof( double ), CompareDoubles );
	printf( "{\"heaps\": %d, \"never\": %d, \"after_8s\": %d, \"sleep_s_median\": ", count, never, late );
	PrintNumber( sleeps[count / 2] );
	printf( ", \"sleep_s_p90\": " );
	PrintNumber( sleeps[count * 9 / 10] );
	printf( "}" );
}

// ------------------------------------------------------------------ circle bins
// 200 balls of radius 0.3 dropped in rows of 11 (0.7 m apart, every other
// row shifted by `o`) into a bin 8 m wide, 15 s: the mean and highest ball
// heights and when all sleep (NaN: not within 15 s). Eight bins, `o` from
// 0 (a lattice: the balls stay in columns) to 0.19 m.
typedef struct BinFigures
{
	double meanY, top, sleep;
} BinFigures;

static BinFigures CircleBin( float o )
{
	b2WorldId w = NewWorld( true );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId g = b2CreateBody( w, &bd );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Polygon floor = b2MakeOffsetBox( 4.0f, 0.5f, ( b2Vec2 ){ 0.0f, -0.5f }, b2Rot_identity );
	b2CreatePolygonShape( g, &sd, &floor );
	for ( int side = -1; side <= 1; side += 2 )
	{
		b2Polygon wall = b2MakeOffsetBox( 0.5f, 10.0f, ( b2Vec2 ){ 4.5f * side, 10.0f }, b2Rot_identity );
		b2CreatePolygonShape( g, &sd, &wall );
	}
	enum
	{
		BALLS = 200
	};
	b2BodyId balls[BALLS];
	b2Circle c = { { 0.0f, 0.0f }, 0.3f };
	for ( int i = 0; i < BALLS; ++i )
	{
		bd = b2DefaultBodyDef();
		bd.type = b2_dynamicBody;
		bd.position = ( b2Vec2 ){ -3.5f + 0.7f * ( i % 11 ) + o * ( ( i / 11 ) % 2 ), 0.5f + 0.7f * ( i / 11 ) };
		balls[i] = b2CreateBody( w, &bd );
		b2CreateCircleShape( balls[i], &sd, &c );
	}
	BinFigures f = { 0.0, 0.0, NAN };
	for ( int s = 1; s <= 900; ++s )
	{
		Step( w );
		if ( isnan( f.sleep ) && AllAsleep( balls, BALLS ) )
			f.sleep = s * DT;
	}
	for ( int i = 0; i < BALLS; ++i )
	{
		double y = b2Body_GetPosition( balls[i] ).y;
		f.meanY += y / BALLS;
		f.top = fmax( f.top, y );
	}
	b2DestroyWorld( w );
	return f;
}

static void CircleBins( void )
{
	float offsets[8] = { 0.0f, 0.02f, 0.05f, 0.08f, 0.11f, 0.13f, 0.17f, 0.19f };
	double mean[8], top[8], sleep[8];
	for ( int k = 0; k < 8; ++k )
	{
		BinFigures f = CircleBin( offsets[k] );
		mean[k] = f.meanY;
		top[k] = f.top;
		sleep[k] = isnan( f.sleep ) ? 15.0 : f.sleep;
	}
	qsort( mean, 8, sizeof( double ), CompareDoubles );
	qsort( top, 8, sizeof( double ), CompareDoubles );
	qsort( sleep, 8, sizeof( double ), CompareDoubles );
	printf( "{\"bins\": 8, \"mean_y_median\": " );
	PrintNumber( mean[4] );
	printf( ", \"top_median\": " );
	PrintNumber( top[4] );
	printf( ", \"sleep_s_median\": " );
	PrintNumber( sleep[4] );
	printf( ", \"sleep_s_latest\": " );
	PrintNumber( sleep[7] );
	printf( "}" );
}

// ------------------------------------------------------------------ car
// bitroom's `car` scene (shared/src/scene/joint_scenes.rs), built here as it is there.
static void Segment( b2BodyId ground, const b2ShapeDef* sd, float x1, float y1, float x2, float y2 )
{
	b2Segment seg = { { x1, y1 }, { x2, y2 } };
	b2CreateSegmentShape( ground, sd, &seg );
}

// ------------------------------------------------------------------ bridge
// bitroom's `bridge` scene (shared/src/scene/joint_scenes.rs), built here as
// it is there: 30 planks (half 0.5 x 0.125, density 20) pinned end to end by
// revolute joints between two static anchors at (-15, 10) and (15, 10), five
// boxes (half 0.5) dropped from y = 13 and three balls (radius 0.6) from
// y = 16; 600 steps.
static void Bridge( void )
{
	b2WorldId w = NewWorld( true );
	Ground( w, 40.0f );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId anchors = b2CreateBody( w, &bd );
	b2ShapeDef plank = b2DefaultShapeDef();
	plank.density = 20.0f;
	b2Polygon plankBox = b2MakeBox( 0.5f, 0.125f );
	enum
	{
		PLANKS = 30,
		LOADS = 8
	};
	b2BodyId bodies[PLANKS + LOADS];
	b2JointId joints[PLANKS + 1];
	b2BodyId prev = anchors;
	bd.type = b2_dynamicBody;
	for ( int i = 0; i < PLANKS; ++i )
	{
		bd.position = ( b2Vec2 ){ -15.0f + i + 0.5f, 10.0f };
		b2BodyId b = b2CreateBody( w, &bd );
		b2CreatePolygonShape( b, &plank, &plankBox );
		b2RevoluteJointDef jd = PinDef( prev, b, ( b2Vec2 ){ -15.0f + i, 10.0f } );
		joints[i] = b2CreateRevoluteJoint( w, &jd );
		bodies[i] = b;
		prev = b;
	}
	b2RevoluteJointDef last = PinDef( prev, anchors, ( b2Vec2 ){ 15.0f, 10.0f } );
	joints[PLANKS] = b2CreateRevoluteJoint( w, &last );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2Polygon box = b2MakeBox( 0.5f, 0.5f );
	for ( int i = 0; i < 5; ++i )
	{
		bd.position = ( b2Vec2 ){ -8.0f + 4.0f * i, 13.0f };
		bodies[PLANKS + i] = b2CreateBody( w, &bd );
		b2CreatePolygonShape( bodies[PLANKS + i], &sd, &box );
	}
	for ( int i = 0; i < 3; ++i )
	{
		bd.position = ( b2Vec2 ){ -6.0f + 6.0f * i, 16.0f };
		bodies[PLANKS + 5 + i] = b2CreateBody( w, &bd );
		b2Circle ball = { { 0.0f, 0.0f }, 0.6f };
		b2CreateCircleShape( bodies[PLANKS + 5 + i], &sd, &ball );
	}
	double maxSag = 0.0, gap = 0.0, sleep = NAN, lowest = 0.0;
	for ( int s = 1; s <= 600; ++s )
	{
		Step( w );
		lowest = 1e9;
		for ( int i = 0; i < PLANKS; ++i )
			lowest = fmin( lowest, b2Body_GetPosition( bodies[i] ).y );
		maxSag = fmax( maxSag, 10.0 - lowest );
		for ( int i = 0; i <= PLANKS; ++i )
			gap = fmax( gap, JointGap( joints[i] ) );
		if ( isnan( sleep ) && AllAsleep( bodies, PLANKS + LOADS ) )
			sleep = s * DT;
	}
	// A load still on the bridge: above the lowest plank's centre less 1 m.
	int on = 0;
	for ( int i = 0; i < LOADS; ++i )
		on += b2Body_GetPosition( bodies[PLANKS + i] ).y > lowest - 1.0;
	printf( "{\"sag\": " );
	PrintNumber( 10.0 - lowest );
	printf( ", \"max_sag\": " );
	PrintNumber( maxSag );
	printf( ", \"max_joint_gap\": " );
	PrintNumber( gap );
	printf( ", \"loads_on\": %d, \"sleep_s\": ", on );
	PrintNumber( sleep );
	printf( "}" );
	b2DestroyWorld( w );
}

static void Car( void )
{
	b2WorldId w = NewWorld( true );
	b2BodyDef bd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &bd );
	b2ShapeDef terrain = b2DefaultShapeDef();
	terrain.material.friction = 0.8f;
	Segment( ground, &terrain, -20.0f, 0.0f, 20.0f, 0.0f );
	float heights[10] = { 0.25f, 1.0f, 4.0f, 0.0f, 0.0f, -1.0f, -2.0f, -2.0f, -1.25f, 0.0f };
	float x = 20.0f, y = 0.0f;
	for ( int k = 0; k < 2; ++k )
	{
		for ( int i = 0; i < 10; ++i )
		{
			Segment( ground, &terrain, x, y, x + 5.0f, heights[i] );
			x += 5.0f;
			y = heights[i];
		}
	}
	Segment( ground, &terrain, x, y, x + 40.0f, 0.0f );
	for ( int i = 0; i < 4; ++i )
	{
		bd.position = ( b2Vec2 ){ 6.0f + 3.0f * i, 0.0f };
		b2BodyId bump = b2CreateBody( w, &bd );
		b2Capsule cap = { { -0.5f, 0.0f }, { 0.5f, 0.0f }, 0.12f };
		b2CreateCapsuleShape( bump, &terrain, &cap );
	}
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ 0.0f, 1.0f };
	b2BodyId chassis = b2CreateBody( w, &bd );
	b2Vec2 pts[6] = { { -1.5f, -0.5f }, { 1.5f, -0.5f }, { 1.5f, 0.0f }, { 0.0f, 0.9f }, { -1.15f, 0.9f }, { -1.5f, 0.2f } };
	b2Hull hull = b2ComputeHull( pts, 6 );
	b2Polygon body = b2MakePolygon( &hull, 0.0f );
	b2ShapeDef chassisDef = b2DefaultShapeDef();
	chassisDef.material.friction = 0.2f;
	b2CreatePolygonShape( chassis, &chassisDef, &body );
	b2ShapeDef tyre = b2DefaultShapeDef();
	tyre.density = 2.0f;
	tyre.material.friction = 1.5f;
	float wheelPos[2][2] = { { -1.0f, 0.4f }, { 1.0f, 0.45f } };
	for ( int i = 0; i < 2; ++i )
	{
		bd.position = ( b2Vec2 ){ wheelPos[i][0], wheelPos[i][1] };
		b2BodyId wheel = b2CreateBody( w, &bd );
		b2Circle c = { { 0.0f, 0.0f }, 0.4f };
		b2CreateCircleShape( wheel, &tyre, &c );
		b2WheelJointDef jd = b2DefaultWheelJointDef();
		jd.base.bodyIdA = chassis;
		jd.base.bodyIdB = wheel;
		jd.base.localFrameA.p = ( b2Vec2 ){ wheelPos[i][0], wheelPos[i][1] - 1.0f };
		jd.base.localFrameA.q = b2MakeRot( 0.5f * B2_PI ); // axis (0, 1)
		jd.enableSpring = true;
		jd.hertz = 5.0f;
		jd.dampingRatio = 0.7f;
		jd.enableLimit = true;
		jd.lowerTranslation = -0.25f;
		jd.upperTranslation = 0.25f;
		jd.enableMotor = true;
		jd.motorSpeed = -15.0f;
		jd.maxMotorTorque = 10.0f;
		b2CreateWheelJoint( w, &jd );
	}
	double x5 = NAN, tilt = 0.0;
	for ( int s = 1; s <= 600; ++s )
	{
		Step( w );
		tilt = fmax( tilt, fabs( b2Rot_GetAngle( b2Body_GetRotation( chassis ) ) ) );
		if ( s == 300 )
			x5 = b2Body_GetPosition( chassis ).x;
	}
	printf( "{\"x_5s\": " );
	PrintNumber( x5 );
	printf( ", \"x_10s\": " );
	PrintNumber( b2Body_GetPosition( chassis ).x );
	printf( ", \"max_tilt\": " );
	PrintNumber( tilt );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ dominoes
// bitroom's `dominoes` scene: 40 dominoes 0.2 × 2 m, 1 m apart, the first
// spun at −3 rad/s.
static void Dominoes( void )
{
	enum
	{
		COUNT = 40
	};
	b2WorldId w = NewWorld( true );
	Ground( w, 60.0f );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2BodyId d[COUNT];
	for ( int i = 0; i < COUNT; ++i )
	{
		b2BodyDef bd = b2DefaultBodyDef();
		bd.type = b2_dynamicBody;
		bd.position = ( b2Vec2 ){ -20.0f + i, 1.0f };
		bd.angularVelocity = i == 0 ? -3.0f : 0.0f;
		d[i] = b2CreateBody( w, &bd );
		b2Polygon box = b2MakeBox( 0.1f, 1.0f );
		b2CreatePolygonShape( d[i], &sd, &box );
	}
	double lastFall = NAN;
	bool fallen[COUNT] = { 0 };
	for ( int s = 1; s <= 900; ++s )
	{
		Step( w );
		for ( int i = 0; i < COUNT; ++i )
		{
			if ( !fallen[i] && fabs( b2Rot_GetAngle( b2Body_GetRotation( d[i] ) ) ) > 0.3 )
			{
				fallen[i] = true;
				if ( i == COUNT - 1 )
					lastFall = s * DT;
			}
		}
	}
	int count = 0;
	for ( int i = 0; i < COUNT; ++i )
		count += fabs( b2Rot_GetAngle( b2Body_GetRotation( d[i] ) ) ) > 0.3;
	printf( "{\"fallen\": %d, \"last_falls_s\": ", count );
	PrintNumber( lastFall );
	printf( "}" );
	b2DestroyWorld( w );
}

// --------------------------------------------------------------- struck wall
// Zero gravity: a ram (a 2 m box of density 8, 32 kg) at (−6, 0) moving at
// 20 m/s into a wall of 20 × 30 boxes of 0.4 m (96 kg), each created
// asleep in its own island; 2 s. The ram's speed as it ploughs on, and how
// much of the wall it sets moving.
static void StruckWall( void )
{
	enum
	{
		COLS = 20,
		ROWS = 30
	};
	b2WorldDef def = b2DefaultWorldDef();
	def.gravity = ( b2Vec2 ){ 0.0f, 0.0f };
	b2WorldId w = b2CreateWorld( &def );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	bd.position = ( b2Vec2 ){ -6.0f, 0.0f };
	bd.linearVelocity = ( b2Vec2 ){ 20.0f, 0.0f };
	b2BodyId ram = b2CreateBody( w, &bd );
	b2ShapeDef ramShape = b2DefaultShapeDef();
	ramShape.density = 8.0f;
	b2Polygon big = b2MakeBox( 1.0f, 1.0f );
	b2CreatePolygonShape( ram, &ramShape, &big );
	b2ShapeDef sd = b2DefaultShapeDef();
	b2BodyId wall[COLS * ROWS];
	for ( int i = 0; i < COLS; ++i )
	{
		for ( int j = 0; j < ROWS; ++j )
		{
			b2BodyDef wd = b2DefaultBodyDef();
			wd.type = b2_dynamicBody;
			wd.position = ( b2Vec2 ){ 0.4f * i, 0.4f * ( j - ROWS / 2 ) };
			wd.isAwake = false;
			b2BodyId b = b2CreateBody( w, &wd );
			b2Polygon box = b2MakeBox( 0.2f, 0.2f );
			b2CreatePolygonShape( b, &sd, &box );
			wall[i * ROWS + j] = b;
		}
	}
	double v05 = NAN, v1 = NAN;
	for ( int s = 1; s <= 120; ++s )
	{
		Step( w );
		if ( s == 30 )
			v05 = b2Body_GetLinearVelocity( ram ).x;
		if ( s == 60 )
			v1 = b2Body_GetLinearVelocity( ram ).x;
	}
	int moving = 0;
	double meanVx = 0.0;
	for ( int k = 0; k < COLS * ROWS; ++k )
	{
		b2Vec2 v = b2Body_GetLinearVelocity( wall[k] );
		moving += v.x * v.x + v.y * v.y > 0.01f;
		meanVx += v.x / ( COLS * ROWS );
	}
	printf( "{\"ram_vx_05s\": " );
	PrintNumber( v05 );
	printf( ", \"ram_vx_1s\": " );
	PrintNumber( v1 );
	printf( ", \"ram_vx_2s\": " );
	PrintNumber( b2Body_GetLinearVelocity( ram ).x );
	printf( ", \"moving\": %d, \"wall_mean_vx\": ", moving );
	PrintNumber( meanVx );
	printf( "}" );
	b2DestroyWorld( w );
}

// ------------------------------------------------------------------ spinner
// The `spinner` benchmark scene as it is (docs/benchmark-scenes.md): a
// motor-driven bar at 5 rad/s stirring 6076 pieces of debris inside a
// closed chain of 360 one-sided segments; 300 steps. How fast the debris
// turns, where it is, and how many pieces left the ring.
enum
{
	SPINNER_DEBRIS = 2 * 3038
};
static b2BodyId g_debris[SPINNER_DEBRIS];

static double DebrisMeanSpeed( void )
{
	double sum = 0.0;
	for ( int i = 0; i < SPINNER_DEBRIS; ++i )
		sum += b2Length( b2Body_GetLinearVelocity( g_debris[i] ) );
	return sum / SPINNER_DEBRIS;
}

static void Spinner( void )
{
	b2WorldDef def = b2DefaultWorldDef();
	b2WorldId w = b2CreateWorld( &def );
	b2BodyDef gd = b2DefaultBodyDef();
	b2BodyId ground = b2CreateBody( w, &gd );
	b2Vec2 points[360];
	b2Rot q = b2MakeRot( -2.0f * B2_PI / 360.0f );
	b2Vec2 p = { 40.0f, 0.0f };
	for ( int i = 0; i < 360; ++i )
	{
		points[i] = ( b2Vec2 ){ p.x, p.y + 32.0f };
		p = b2RotateVector( q, p );
	}
	b2SurfaceMaterial material = { 0 };
	material.friction = 0.1f;
	b2ChainDef chainDef = b2DefaultChainDef();
	chainDef.points = points;
	chainDef.count = 360;
	chainDef.isLoop = true;
	chainDef.materials = &material;
	chainDef.materialCount = 1;
	b2CreateChain( ground, &chainDef );

	b2BodyDef sd = b2DefaultBodyDef();
	sd.type = b2_dynamicBody;
	sd.position = ( b2Vec2 ){ 0.0f, 12.0f };
	sd.enableSleep = false;
	b2BodyId spinner = b2CreateBody( w, &sd );
	b2Polygon bar = b2MakeRoundedBox( 0.4f, 20.0f, 0.2f );
	b2ShapeDef barShape = b2DefaultShapeDef();
	barShape.material.friction = 0.0f;
	b2CreatePolygonShape( spinner, &barShape, &bar );
	b2RevoluteJointDef jd = b2DefaultRevoluteJointDef();
	jd.base.bodyIdA = ground;
	jd.base.bodyIdB = spinner;
	jd.base.localFrameA.p = b2Body_GetLocalPoint( ground, sd.position );
	jd.enableMotor = true;
	jd.motorSpeed = 5.0f;
	jd.maxMotorTorque = FLT_MAX;
	b2CreateRevoluteJoint( w, &jd );

	b2Capsule capsule = { { -0.25f, 0.0f }, { 0.25f, 0.0f }, 0.25f };
	b2Circle circle = { { 0.0f, 0.0f }, 0.35f };
	b2Polygon square = b2MakeSquare( 0.35f );
	b2BodyDef bd = b2DefaultBodyDef();
	bd.type = b2_dynamicBody;
	b2ShapeDef debrisShape = b2DefaultShapeDef();
	debrisShape.material.friction = 0.1f;
	debrisShape.material.restitution = 0.1f;
	debrisShape.density = 0.25f;
	float x = -23.0f, y = 2.0f;
	for ( int i = 0; i < SPINNER_DEBRIS; ++i )
	{
		bd.position = ( b2Vec2 ){ x, y };
		g_debris[i] = b2CreateBody( w, &bd );
		if ( i % 3 == 0 )
			b2CreateCapsuleShape( g_debris[i], &debrisShape, &capsule );
		else if ( i % 3 == 1 )
			b2CreateCircleShape( g_debris[i], &debrisShape, &circle );
		else
			b2CreatePolygonShape( g_debris[i], &debrisShape, &square );
		x += 0.5f;
		if ( x >= 23.0f )
		{
			x = -23.0f;
			y += 0.5f;
		}
	}
	double s100 = NAN, s200 = NAN;
	for ( int s = 1; s <= 300; ++s )
	{
		Step( w );
		if ( s == 100 )
			s100 = DebrisMeanSpeed();
		if ( s == 200 )
			s200 = DebrisMeanSpeed();
	}
	int outside = 0;
	double meanY = 0.0;
	for ( int i = 0; i < SPINNER_DEBRIS; ++i )
	{
		b2Vec2 c = b2Body_GetPosition( g_debris[i] );
		outside += b2Length( ( b2Vec2 ){ c.x, c.y - 32.0f } ) > 40.5f;
		meanY += c.y / SPINNER_DEBRIS;
	}
	printf( "{\"mean_speed_100\": " );
	PrintNumber( s100 );
	printf( ", \"mean_speed_200\": " );
	PrintNumber( s200 );
	printf( ", \"mean_speed_300\": " );
	PrintNumber( DebrisMeanSpeed() );
	printf( ", \"mean_y_300\": " );
	PrintNumber( meanY );
	printf( ", \"outside\": %d}", outside );
	b2DestroyWorld( w );
}

int main( void )
{
	printf( "{\n  \"engine\": \"Box2D v3 (boxdd-sys 0.6.0, upstream 56edae79), default settings, 60 Hz, 4 substeps\",\n" );
	printf( "  \"columns\": [" );
	int counts[4] = { 10, 20, 30, 50 };
	float gaps[5] = { 0.0f, 0.5f, 1.0f, 2.0f, 5.0f };
	bool first = true;
	for ( int c = 0; c < 4; ++c )
	{
		for ( int g = 0; g < 5; ++g )
		{
			Column( counts[c], gaps[g], first );
			first = false;
		}
	}
	printf( "\n  ],\n  \"pyramids\": [" );
	Pyramid( 20, true );
	Pyramid( 40, false );
	printf( "\n  ],\n  \"ramp\": [" );
	float mus[8] = { 0.0f, 0.1f, 0.2f, 0.3f, 0.34f, 0.38f, 0.45f, 0.6f };
	for ( int i = 0; i < 8; ++i )
		Ramp( mus[i], i == 0 );
	printf( "\n  ],\n  \"rolling\": [" );
	float speeds[5] = { 0.02f, 0.03f, 0.04f, 0.06f, 0.1f };
	for ( int i = 0; i < 5; ++i )
		Rolling( speeds[i], i == 0 );
	printf( "\n  ],\n  \"spin\": [" );
	Spin( 60, false, true );
	Spin( 60, true, false );
	Spin( 30, false, false );
	Spin( 120, false, false );
	printf( "\n  ],\n  \"rates\": [" );
	Rate( 30, true );
	Rate( 120, false );
	printf( "\n  ],\n  \"joints\": [" );
	Cantilever( false, true );
	Cantilever( true, false );
	for ( int m = 0; m < 3; ++m )
		Elevator( m );
	for ( int m = 0; m < 3; ++m )
		Flipper( m );
	for ( int m = 0; m < 3; ++m )
		Rope( m );
	printf( "\n  ],\n  \"pendulum\": [" );
	Pendulum( false );
	printf( ", " );
	Pendulum( true );
	printf( "],\n  \"chain\": " );
	Chain();
	printf( ",\n  \"bounce\": [" );
	Bounce( 0.0f, true );
	Bounce( 0.5f, false );
	Bounce( 1.0f, false );
	printf( "\n  ],\n  \"ragdolls\": " );
	Ragdolls();
	printf( ",\n  \"ragdoll_heaps\": " );
	RagdollHeaps();
	printf( ",\n  \"heap_tail\": " );
	HeapTail();
	printf( ",\n  \"circle_bins\": " );
	CircleBins();
	printf( ",\n  \"car\": " );
	Car();
	printf( ",\n  \"bridge\": " );
	Bridge();
	printf( ",\n  \"dominoes\": " );
	Dominoes();
	printf( ",\n  \"struck_wall\": " );
	StruckWall();
	printf( ",\n  \"spinner\": " );
	Spinner();
	printf( "\n}\n" );
	return 0;
}
